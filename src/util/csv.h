/* SPDX-License-Identifier: Apache-2.0 */
/* CSV fields as RFC 4180 writes them, made safe for spreadsheets: a field holding a comma,
 * a semicolon, a double quote, a tab, CR or LF is quoted, its quotes doubled; any other
 * field is written as it is. Reports use it for names people chose (a user name may hold
 * a comma or a quote).
 *
 * A spreadsheet reads a cell that starts with = + - @ (or their full-width forms), a tab or
 * CR as a formula (CSV or formula injection: "=HYPERLINK(...)" as a user or node name runs
 * when an admin opens the report). Such a field is neutralised as OWASP recommends: a
 * single quote is put before it and the whole is quoted, so the cell reads as the text it
 * is ("'=1+2"). Numbers are not written through here (a negative amount stays a number). */
#ifndef GP_UTIL_CSV_H
#define GP_UTIL_CSV_H

#include <stdbool.h>

#include "util/buf.h"

/* Appends `s` as one field (no separator). NULL appends nothing: an empty field. */
void gp_csv_field(gp_buf *b, const char *s);
/* Whether a spreadsheet would read `s` as a formula (gp_csv_field neutralises it). */
bool gp_csv_is_formula(const char *s);

#endif
