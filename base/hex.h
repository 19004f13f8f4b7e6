/*
 * hex.h - lowercase hexadecimal, as used for sha256 and git ids on the wire and in the store.
 */
#ifndef HM_HEX_H
#define HM_HEX_H

#include <stdbool.h>
#include <stddef.h>

/* Write 2*n lowercase hex digits and a NUL to out (which holds 2*n+1 bytes). */
void hex_encode(const unsigned char *in, size_t n, char *out);
/* The value of one hex digit (either case), or -1. */
int hex_digit(char c);
/* Read the first 2*n hex digits of s (either case) into out[n]. Returns 0, or -1 (out partly
 * written) when s has fewer digits or a non-hex character there. */
int hex_decode(const char *s, unsigned char *out, size_t n);
/* True if s is exactly len lowercase hex digits (no more, no less). */
bool hex_is_lower(const char *s, size_t len);

#endif
