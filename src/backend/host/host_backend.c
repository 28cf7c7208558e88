/* SCAFFOLD: replaced by the real host backend in the next commits. */
#include "backend/backend.h"
#include "core/error.h"

static mg_status_t mg__todo(void) {
  return mg__error(MG_ERR_NOT_SUPPORTED, "host backend: under construction");
}
static mg_status_t h_available(void) { return MG_OK; }
static mg_status_t h_unique_id(mg_unique_id_t *id) { (void)id; return mg__todo(); }
static mg_status_t h_init(mg_comm_t *c, const mg_unique_id_t *id, double d) { return mg__todo(); }
static mg_status_t h_init_all(mg_comm_t **c, int n, const int *dv, double d) { return mg__todo(); }
static mg_status_t h_split(mg_comm_t *c, int color, int key, mg_comm_t *ch, double d) { return mg__todo(); }
static mg_status_t h_shrink(mg_comm_t *c, const int *e, int n, mg_comm_t *ch, double d) { return mg__todo(); }
static mg_status_t h_finalize(mg_comm_t *c, double d) { return mg__todo(); }
static void h_abort(mg_comm_t *c) {}
static void h_destroy(mg_comm_t *c) {}
static mg_status_t h_async(mg_comm_t *c) { return MG_OK; }
static mg_status_t h_check(const mg__op_t *op, const char *fn) { return MG_OK; }
static mg_status_t h_redop_create(mg_comm_t *c, mg_dtype_t dt, mg__redop_t *r) { return MG_OK; }
static void h_redop_destroy(mg_comm_t *c, mg__redop_t *r) {}
static mg_status_t h_launch(mg__op_t *const *ops, int n) { return mg__todo(); }

const mg__backend_t mg__backend_host = {
    MG__BACKEND_VERSION, "host", MG_BACKEND_HOST, MG__CAP_SPLIT | MG__CAP_SHRINK | MG__CAP_PREMUL,
    0, h_available, h_unique_id, h_init, h_init_all, h_split, h_shrink, h_finalize, h_abort,
    h_destroy, h_async, h_check, h_redop_create, h_redop_destroy, h_launch};
