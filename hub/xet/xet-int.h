/*
 * xet-int.h - what the files of hub/xet share and no one else: the spec's DATA_KEY (hash.c), which
 * identity.c's streaming chunk hasher is keyed with too.
 */
#ifndef HM_HUB_XET_INT_H
#define HM_HUB_XET_INT_H

#include <stdint.h>

extern const uint8_t xet__data_key[32];

#endif
