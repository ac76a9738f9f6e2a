/* SPDX-License-Identifier: Apache-2.0 */
/* Model names and their hashes (model.h). */
#include "protocol/model.h"

#include <string.h>

bool gp_proto_model_name_valid(const char *name) {
  if (!name) return false;
  size_t n = strlen(name);
  if (n == 0 || n >= GP_PROTO_MODEL_NAME_MAX) return false;
  for (size_t i = 0; i < n; i++) {
    char c = name[i];
    bool alnum = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
    if (!alnum && (i == 0 || (c != '.' && c != '_' && c != '-'))) return false;
  }
  return true;
}

uint64_t gp_proto_model_hash(const char *name) {
  uint64_t h = 14695981039346656037ull; /* FNV-1a, as gp_proto_image_hash */
  for (const char *p = "model:"; *p; p++) h = (h ^ (unsigned char)*p) * 1099511628211ull;
  for (const char *p = name; *p; p++) h = (h ^ (unsigned char)*p) * 1099511628211ull;
  return h ? h : 1;
}
