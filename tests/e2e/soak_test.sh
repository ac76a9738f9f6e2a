#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# A short soak (scripts/soak.sh): 30 s of submissions, cancels, log reads, agent kills and
# restarts and a slow client army of 300 connections, then no acknowledged job lost, every
# job final, no well-behaved request unanswered, the server's memory bounded. The settings
# of scripts/soak.sh apply (SOAK_SLOW_CLIENTS, SOAK_SERVER_YAML, ...); SOAK_TEST_DURATION
# changes the length.
root=${GP_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}
DURATION=${SOAK_TEST_DURATION:-30} exec bash "$root/scripts/soak.sh"
