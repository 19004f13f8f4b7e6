/*
 * banned.h - C functions no file of ours may call, refused at compile time (git's banned.h, the same
 * list). Every C file of the project gets it first, through the build (meson.build passes it with
 * -include), after the two system headers that declare these functions, so that a later include of
 * them is a no-op and only a call in our own code meets the macro. strcpy, strcat, sprintf and their
 * kin write past their buffers when a length is wrong; strncpy leaves no NUL; strtok keeps hidden
 * state; gets cannot be used safely at all. Use snprintf, memcpy with a checked length, xasprintf,
 * or strtok_r.
 */
#ifndef HM_BASE_BANNED_H
#define HM_BASE_BANNED_H
/* assembly sources (BLAKE3's .S files, built by the C compiler) get it too, and have nothing to ban */
#ifndef __ASSEMBLER__

#include <stdio.h>
#include <string.h>

#define BANNED(func) sorry_##func##_is_a_banned_function

#undef strcpy
#define strcpy(x, y) BANNED(strcpy)
#undef strcat
#define strcat(x, y) BANNED(strcat)
#undef strncpy
#define strncpy(x, y, n) BANNED(strncpy)
#undef strncat
#define strncat(x, y, n) BANNED(strncat)
#undef sprintf
#define sprintf(...) BANNED(sprintf)
#undef vsprintf
#define vsprintf(...) BANNED(vsprintf)
#undef strtok
#define strtok(x, y) BANNED(strtok)
#undef gets
#define gets(x) BANNED(gets)

#endif /* __ASSEMBLER__ */
#endif
