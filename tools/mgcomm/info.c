/* SCAFFOLD: replaced by the loader work (issue 2). */
#include <stdio.h>
#include "cli.h"
#include "mgcomm.h"
int mg_cli_info(int argc, char **argv) { (void)argc; (void)argv; printf("mgcomm %s\n", mg_version_string()); return 0; }
