/* A tiny parser in the style of cJSON. */
#include <stdlib.h>
#include <string.h>
#include <ctype.h>
#include "cjs.h"

#if defined(__GNUC__)
#define CJS_UNUSED __attribute__((unused))
#else
#define CJS_UNUSED
#endif

static cjs_hooks global_hooks = { malloc, free };

/* The library version. */
CJS_PUBLIC(const char*) cjs_version(void)
{
    static char version[16];
    strcpy(version, "1.0.0");
    return version;
}

static void * CJS_CDECL internal_malloc(size_t size)
{
    return malloc(size);
}

static void CJS_CDECL internal_free(void *pointer)
{
    free(pointer);
}

CJS_PUBLIC(void) cjs_init_hooks(cjs_hooks* hooks)
{
    if (hooks == NULL)
    {
        global_hooks.malloc_fn = internal_malloc;
        global_hooks.free_fn = internal_free;
        return;
    }
    global_hooks.malloc_fn = hooks->malloc_fn ? hooks->malloc_fn : internal_malloc;
    global_hooks.free_fn = hooks->free_fn ? hooks->free_fn : internal_free;
}

static cjs_item *new_item(void)
{
    cjs_item *node = (cjs_item *)global_hooks.malloc_fn(sizeof(cjs_item));
    if (node)
    {
        memset(node, '\0', sizeof(cjs_item));
    }
    return node;
}

static const char *skip_whitespace(const char *in)
{
    while (in && *in && isspace((unsigned char)*in))
    {
        in++;
    }
    return in;
}

static CJS_UNUSED int is_digit(char c)
{
    return c >= '0' && c <= '9';
}

/* Parse a number or an array of numbers. */
static const char *parse_value(cjs_item * const item, const char *in, int depth)
{
    in = skip_whitespace(in);
    if (depth > CJS_NESTING_LIMIT)
    {
        return NULL;
    }
    if (*in == '[')
    {
        cjs_item *head = NULL;
        cjs_item *tail = NULL;
        item->type = CJS_Array;
        in = skip_whitespace(in + 1);
        while (*in && *in != ']')
        {
            cjs_item *child = new_item();
            if (child == NULL)
            {
                return NULL;
            }
            in = parse_value(child, in, depth + 1);
            if (in == NULL)
            {
                return NULL;
            }
            if (head == NULL) { head = tail = child; } else { tail->next = child; tail = child; }
            in = skip_whitespace(in);
            if (*in == ',') { in++; }
        }
        item->child = head;
        return *in == ']' ? in + 1 : NULL;
    }
    item->type = CJS_Number;
    item->number = strtod(in, (char **)&in);
    return in;
}

CJS_PUBLIC(cjs_item *) cjs_parse(const char *value)
{
    cjs_item *item = new_item();
    if (item == NULL)
    {
        return NULL;
    }
    if (parse_value(item, value, 0) == NULL)
    {
        cjs_delete(item);
        return NULL;
    }
    return item;
}

CJS_PUBLIC(void) cjs_delete(cjs_item *item)
{
    cjs_item *next = NULL;
    while (item != NULL)
    {
        next = item->next;
        if (item->child != NULL)
        {
            cjs_delete(item->child);
        }
        global_hooks.free_fn(item);
        item = next;
    }
}

CJS_PUBLIC(int) cjs_array_size(const cjs_item *array)
{
    cjs_item *child = NULL;
    int size = 0;
    cjs_array_for_each(child, array)
    {
        size++;
    }
    return size;
}

CJS_PUBLIC(cjs_item *) cjs_array_item(const cjs_item *array, int index)
{
    cjs_item *current = array ? array->child : NULL;
    while (current != NULL && index > 0)
    {
        index--;
        current = current->next;
    }
    return current;
}

CJS_PUBLIC(cjs_bool) cjs_is_number(const cjs_item * const item)
{
    if (item == NULL)
    {
        return 0;
    }
    return (item->type & 0xFF) == CJS_Number;
}

CJS_PUBLIC(double) cjs_number_value(const cjs_item * const item)
{
    if (!cjs_is_number(item))
    {
        return (double)0;
    }
    return item->number;
}
