/*
 * hot.h -- MG__HOT marks the functions that every operation runs through, from the public call
 * to the backend's launch and back. GCC and Clang place them together (in .text.hot), so that
 * one call touches a few code pages rather than one page per source file: that is most of what
 * an operation costs when the caches are cold, as they are right after NCCL's own thread has
 * run (bench/nccl_perf.c, "overhead"). Mark only that path.
 *
 * The data that path reads follows the same rule: the fields every operation reads come first in
 * their objects (communicator, backend, call tables, flight-recorder ring), and those objects
 * start on a cache line, so that one operation touches as few lines as the fields fill.
 */
#ifndef MG_CORE_HOT_H
#define MG_CORE_HOT_H

#if defined(__GNUC__) || defined(__clang__)
#define MG__HOT __attribute__((hot))
#else
#define MG__HOT
#endif

#endif
