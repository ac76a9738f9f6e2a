/* SPDX-License-Identifier: Apache-2.0 */
/* Job scripts as `gpool submit job.sh` reads them: the #GPOOL and #SBATCH directives of the
 * leading comment block (gp_submit_parse_script), merged and checked (gp_submit_finish),
 * then the GPU model names resolved against a small fleet. Every script is turned into a
 * request body or refused with a message. */
#include <jansson.h>

#include "cli/submit_args.h"
#include "fuzz.h"

static json_t *fleet(void) {
  static json_t *nodes;
  if (!nodes) {
    json_error_t je;
    nodes = json_loads("{\"nodes\": [{\"model\": \"H100-80GB\"}, {\"model\": \"A100-40GB\"},"
                       " {\"model\": \"L40S\"}]}", 0, &je);
    fuzz_check(nodes != NULL);
  }
  return nodes;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char *text = fuzz_cstr(data, size);
  gp_submit s;
  gp_submit_init(&s);
  s.script = "job.sh";
  gp_err err = {0};
  int rc = gp_submit_parse_script(&s, "job.sh", text, size, &err);
  if (rc == 0) rc = gp_submit_finish(&s, "/home/alice", text, &err);
  if (rc == 0) {
    fuzz_check(json_is_object(s.req));
    rc = gp_submit_resolve_types(s.req, fleet(), &err);
  }
  if (rc) fuzz_check(err.message[0] != '\0');
  gp_submit_done(&s);
  free(text);
  return 0;
}
