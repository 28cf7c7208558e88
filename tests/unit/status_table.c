/*
 * status_table.c -- golden test of MG_STATUS_MAP (contract 1: the table is append-only).
 * Every entry is written out here with its value, name and message, so renumbering, renaming
 * or rewording one fails this test, and so does adding one without listing it here.
 */
#include "test.h"

static const struct {
  mg_status_t status;
  int value;
  const char *name;
  const char *message;
} golden[] = {
    {MG_OK, 0, "MG_OK", "success"},
    {MG_INPROGRESS, 1, "MG_INPROGRESS", "operation in progress"},
    {MG_ERR_INVALID_ARGUMENT, -1, "MG_ERR_INVALID_ARGUMENT", "invalid argument"},
    {MG_ERR_INVALID_USAGE, -2, "MG_ERR_INVALID_USAGE",
     "invalid usage (bad handle, wrong state or wrong call order)"},
    {MG_ERR_NOT_SUPPORTED, -3, "MG_ERR_NOT_SUPPORTED",
     "not supported by this backend or library version"},
    {MG_ERR_BACKEND_UNAVAILABLE, -4, "MG_ERR_BACKEND_UNAVAILABLE",
     "backend unavailable (library or device not found)"},
    {MG_ERR_OUT_OF_MEMORY, -5, "MG_ERR_OUT_OF_MEMORY", "out of memory"},
    {MG_ERR_TIMED_OUT, -6, "MG_ERR_TIMED_OUT", "timed out"},
    {MG_ERR_ABORTED, -7, "MG_ERR_ABORTED", "aborted"},
    {MG_ERR_REMOTE, -8, "MG_ERR_REMOTE", "a remote rank failed or exited"},
    {MG_ERR_BACKEND, -9, "MG_ERR_BACKEND", "a backend library call failed"},
    {MG_ERR_SYSTEM, -10, "MG_ERR_SYSTEM", "an operating-system call failed"},
    {MG_ERR_STALE, -11, "MG_ERR_STALE", "handle belongs to an older generation"},
    {MG_ERR_INTERNAL, -12, "MG_ERR_INTERNAL", "internal error"},
};
#define NGOLDEN (int)(sizeof golden / sizeof golden[0])

int main(void) {
  /* The table has exactly the entries listed here. */
  int in_table = 0;
#define COUNT(nm_, val_, msg_) in_table++;
  MG_STATUS_MAP(COUNT)
#undef COUNT
  ASSERT_EQ(in_table, NGOLDEN);

  /* Each entry, from the table itself, matches its golden line. */
  int seen = 0;
#define CHECK(nm_, val_, msg_)                                \
  do {                                                        \
    ASSERT_LT(seen, NGOLDEN);                                 \
    ASSERT_STR_EQ("MG_" #nm_, golden[seen].name);             \
    ASSERT_EQ(val_, golden[seen].value);                      \
    ASSERT_STR_EQ(msg_, golden[seen].message);                \
    seen++;                                                   \
  } while (0);
  MG_STATUS_MAP(CHECK)
#undef CHECK

  for (int i = 0; i < NGOLDEN; i++) {
    ASSERT_EQ((int)golden[i].status, golden[i].value);
    ASSERT_STR_EQ(mg_status_name(golden[i].status), golden[i].name);
    ASSERT_STR_EQ(mg_status_string(golden[i].status), golden[i].message);
    /* Names and values are unique; errors are negative, MG_OK is 0, progress positive. */
    for (int j = 0; j < i; j++) {
      ASSERT(strcmp(golden[i].name, golden[j].name) != 0);
      ASSERT_NE(golden[i].value, golden[j].value);
    }
    if (strncmp(golden[i].name, "MG_ERR_", 7) == 0) ASSERT_LT(golden[i].value, 0);
  }
  ASSERT_STR_EQ(mg_status_name((mg_status_t)-1000), "MG_UNKNOWN_STATUS");
  ASSERT_STR_EQ(mg_status_string((mg_status_t)-1000), "unknown status");
  ASSERT_STR_EQ(mg_status_name((mg_status_t)2), "MG_UNKNOWN_STATUS");
  return 0;
}
