#include <stdio.h>
#include <stdlib.h>
#include "cjs.h"
#include "cjs_utils.h"

static void print_sum(const char *text)
{
    cjs_item *root = cjs_parse(text);
    printf("%f\n", cjs_utils_sum(root));
    cjs_delete(root);
}

int CJS_CDECL main(void)
{
    printf("version %s\n", cjs_version());
    print_sum("[1, 2, 3]");
    return 0;
}
