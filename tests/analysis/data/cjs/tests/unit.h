#ifndef UNIT_H
#define UNIT_H
#include <stdio.h>

#define UNIT_BEGIN(name) static int name(void) { int unit_failures = 0;
#define UNIT_END return unit_failures; }
#define UNIT_CHECK(cond) do { if (!(cond)) { unit_failures++; printf("failed: %s\n", #cond); } } while (0)
#define UNIT_RUN(test) do { failures += test(); } while (0)

#endif
