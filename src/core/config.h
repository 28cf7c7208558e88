/*
 * config.h -- reading a caller's mg_config_t, whatever released layout it was built with
 * (config.c). Every entry point that takes a config reads it here and keeps only the result.
 */
#ifndef MG_CORE_CONFIG_H
#define MG_CORE_CONFIG_H

#include "mgcomm.h"

/* Reads the caller's config `in` into out, in this library's layout: the fields in's version has,
 * then MG_CONFIG_INIT's defaults for the fields appended after it; out->size and out->version are
 * this library's. NULL in gives the defaults. A size and version that are not one released layout
 * (see mgcomm.h) is MG_ERR_INVALID_USAGE; a field value out of its range is
 * MG_ERR_INVALID_ARGUMENT. Both messages begin with fn. out is written in every case. */
mg_status_t mg__config_read(const mg_config_t *in, const char *fn, mg_config_t *out);

#endif
