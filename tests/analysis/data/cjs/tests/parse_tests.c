#include "unit.h"
#include "../cjs.h"

static cjs_item *parse_or_die(const char *text)
{
    cjs_item *item = cjs_parse(text);
    if (item == NULL)
    {
        printf("cannot parse %s\n", text);
        exit(1);
    }
    return item;
}

UNIT_BEGIN(parses_numbers)
    cjs_item *item = parse_or_die("42");
    UNIT_CHECK(cjs_is_number(item));
    cjs_delete(item);
UNIT_END

UNIT_BEGIN(parses_arrays)
    cjs_item *item = parse_or_die("[1, 2]");
    UNIT_CHECK(cjs_array_size(item) == 2);
    cjs_delete(item);
UNIT_END

static int count_numbers(const cjs_item *array)
{
    int count = 0;
    cjs_item *element = NULL;
    cjs_array_for_each(element, array)
    {
        if (cjs_is_number(element))
        {
            count++;
        }
    }
    return count;
}

static double first_number(const cjs_item *array)
{
    return cjs_number_value(cjs_array_item(array, 0));
}

int CJS_CDECL main(void)
{
    int failures = 0;
    cjs_item *item = parse_or_die("[1, [2], 3]");
    UNIT_RUN(parses_numbers);
    UNIT_RUN(parses_arrays);
    failures += count_numbers(item) != 2;
    failures += first_number(item) != 1;
    cjs_delete(item);
    return failures;
}
