/*
 * json.c -- the one JSON string writer of the command-line tool (info, topo and bench's --json).
 */
#include <stdio.h>

#include "cli.h"

/* Length of the valid UTF-8 sequence at p (1..4), or 0 when p does not start one. Rejects
 * overlong forms, surrogates and code points above U+10FFFF. */
static int utf8_len(const unsigned char *p) {
  unsigned c = p[0];
  if (c < 0x80) return 1;
  int n;
  unsigned min, cp;
  if ((c & 0xe0) == 0xc0) n = 2, min = 0x80, cp = c & 0x1f;
  else if ((c & 0xf0) == 0xe0) n = 3, min = 0x800, cp = c & 0x0f;
  else if ((c & 0xf8) == 0xf0) n = 4, min = 0x10000, cp = c & 0x07;
  else return 0;
  for (int i = 1; i < n; i++) {
    if ((p[i] & 0xc0) != 0x80) return 0; /* also stops at the terminating NUL */
    cp = (cp << 6) | (p[i] & 0x3f);
  }
  if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return 0;
  return n;
}

/* Writes s as a JSON string (NULL as null). Quotes, backslashes and control characters are
 * escaped; bytes that are not valid UTF-8 (a path may hold any byte) become U+FFFD, so the
 * output is always valid JSON. */
void mg_cli_json_str(FILE *f, const char *s) {
  if (s == NULL) {
    fputs("null", f);
    return;
  }
  fputc('"', f);
  for (const unsigned char *p = (const unsigned char *)s; *p;) {
    unsigned c = *p;
    switch (c) {
      case '"': fputs("\\\"", f); p++; continue;
      case '\\': fputs("\\\\", f); p++; continue;
      case '\b': fputs("\\b", f); p++; continue;
      case '\f': fputs("\\f", f); p++; continue;
      case '\n': fputs("\\n", f); p++; continue;
      case '\r': fputs("\\r", f); p++; continue;
      case '\t': fputs("\\t", f); p++; continue;
      default: break;
    }
    if (c < 0x20 || c == 0x7f) {
      fprintf(f, "\\u%04x", c);
      p++;
      continue;
    }
    int n = utf8_len(p);
    if (n == 0) {
      fputs("\\ufffd", f);
      p++;
      continue;
    }
    fwrite(p, 1, (size_t)n, f);
    p += n;
  }
  fputc('"', f);
}
