/* SPDX-License-Identifier: Apache-2.0 */
/* The scenario files of this directory (NAME.yaml + NAME.json or NAME.err), one test each
 * in tests/core/scenarios_test.c. Add a line here when you add a scenario. tests/test.h's
 * GP_TESTS takes at most 64 tests per file: past 63 scenarios, split the list in two files. */
#ifndef GP_TESTS_CORE_SCENARIOS_LIST_H
#define GP_TESTS_CORE_SCENARIOS_LIST_H

#define GP_SCENARIOS(X) \
  X(backfill_default_limit) \
  X(backfill_other_gpus) \
  X(backfill_short_job) \
  X(backfill_would_delay) \
  X(begin_time) \
  X(bad_duplicate_job) \
  X(bad_gpu_held_twice) \
  X(bad_gpu_out_of_range) \
  X(bad_priority_class) \
  X(bad_unknown_key) \
  X(bad_unknown_node) \
  X(bad_unknown_queue) \
  X(bad_wrong_type) \
  X(bad_yaml_syntax) \
  X(binpack) \
  X(block_preference) \
  X(dependencies) \
  X(drained_gpu_skipped) \
  X(fair_share_nested) \
  X(fair_share_thirds) \
  X(fair_share_weights_limits) \
  X(fractions_bestfit) \
  X(gang_all_or_nothing) \
  X(gang_starts_whole) \
  X(gang_tasks_per_node) \
  X(exclusive_nodes) \
  X(exclusive_backfill) \
  X(exclusive_preemption) \
  X(holds) \
  X(mig_dynamic) \
  X(mig_instances) \
  X(min_runtime) \
  X(min_runtime_protects_all) \
  X(model_constraints) \
  X(no_pingpong_at_fair_share) \
  X(nvlink_domain) \
  X(order_fifo) \
  X(order_same_second) \
  X(order_sjf) \
  X(placement_filters) \
  X(pool_lends) \
  X(pool_no_lend) \
  X(pool_owner_reclaims) \
  X(preemption_transactional) \
  X(priority_classes_custom) \
  X(priority_order_in_queue) \
  X(priority_preemption_at_limit) \
  X(priority_preemption_at_limit_waits) \
  X(priority_preemption_at_parent_limit) \
  X(priority_preemption_in_queue) \
  X(queue_limit_gang) \
  X(reclaim) \
  X(reclaim_not_preemptible) \
  X(sharing_random_seeded) \
  X(spread) \
  X(stopping_victim_holds) \
  X(timeslice_replicas) \
  X(timeslice_running_replicas) \

#endif
