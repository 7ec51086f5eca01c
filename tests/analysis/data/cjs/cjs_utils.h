#ifndef CJS_UTILS__H
#define CJS_UTILS__H
#include "cjs.h"

#ifdef _MSC_VER
#define CJS_UTILS_API __declspec(dllexport)
#else
#define CJS_UTILS_API
#endif

CJS_UTILS_API double CJS_STDCALL cjs_utils_sum(const cjs_item *array);
CJS_PUBLIC(double) cjs_utils_max(const cjs_item *array);

#endif
