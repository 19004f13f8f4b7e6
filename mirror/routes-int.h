/*
 * routes-int.h - shared by the routes-*.c files of mirror/; nothing outside this folder includes it.
 */
#ifndef HM_MIRROR_ROUTES_INT_H
#define HM_MIRROR_ROUTES_INT_H

#include <jansson.h>

#include "httpd.h"

struct mirror_data;

struct mirror_routes {
	struct mirror_data *data;
};

/* Hugging Face API (routes-hf.c). */
int mirror__route_hf(void *ud, struct httpd_req *req);

/* Send body (consumed) as compact JSON. */
void mirror__respond_json(struct httpd_req *req, int status, json_t *body);

#endif
