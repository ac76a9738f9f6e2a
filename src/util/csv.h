/* SPDX-License-Identifier: Apache-2.0 */
/* CSV fields as RFC 4180 writes them: a field holding a comma, a double quote, CR or LF is
 * quoted, its quotes doubled; any other field is written as it is. Reports use it for
 * names people chose (a user name may hold a comma or a quote). */
#ifndef GP_UTIL_CSV_H
#define GP_UTIL_CSV_H

#include "util/buf.h"

/* Appends `s` as one field (no separator). NULL appends nothing: an empty field. */
void gp_csv_field(gp_buf *b, const char *s);

#endif
