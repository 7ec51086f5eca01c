#include "cjs_utils.h"

CJS_UTILS_API double CJS_STDCALL cjs_utils_sum(const cjs_item *array)
{
    double total = 0;
    cjs_item *element = NULL;
    cjs_array_for_each(element, array)
    {
        total += cjs_number_value(element);
    }
    return total;
}

CJS_PUBLIC(double) cjs_utils_max(const cjs_item *array)
{
    double best = 0;
    int i = 0;
    for (i = 0; i < cjs_array_size(array); i++)
    {
        double value = cjs_number_value(cjs_array_item(array, i));
        if (i == 0 || value > best)
        {
            best = value;
        }
    }
    return best;
}
