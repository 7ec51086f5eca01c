#ifndef CJS__H
#define CJS__H

#ifdef __cplusplus
extern "C"
{
#endif

#if !defined(__WINDOWS__) && (defined(WIN32) || defined(_WIN64) || defined(_WIN32))
#define __WINDOWS__
#endif

#ifdef __WINDOWS__
#define CJS_CDECL __cdecl
#define CJS_STDCALL __stdcall
#if !defined(CJS_HIDE_SYMBOLS) && !defined(CJS_IMPORT_SYMBOLS) && !defined(CJS_EXPORT_SYMBOLS)
#define CJS_EXPORT_SYMBOLS
#endif
#if defined(CJS_HIDE_SYMBOLS)
#define CJS_PUBLIC(type)   type CJS_STDCALL
#elif defined(CJS_EXPORT_SYMBOLS)
#define CJS_PUBLIC(type)   __declspec(dllexport) type CJS_STDCALL
#elif defined(CJS_IMPORT_SYMBOLS)
#define CJS_PUBLIC(type)   __declspec(dllimport) type CJS_STDCALL
#endif
#else /* !__WINDOWS__ */
#define CJS_CDECL
#define CJS_STDCALL
#if (defined(__GNUC__) || defined(__SUNPRO_CC) || defined (__SUNPRO_C)) && defined(CJS_API_VISIBILITY)
#define CJS_PUBLIC(type)   __attribute__((visibility("default"))) type
#else
#define CJS_PUBLIC(type) type
#endif
#endif

#define CJS_NESTING_LIMIT 1000
#define CJS_Invalid (0)
#define CJS_Number  (1 << 3)
#define CJS_String  (1 << 4)
#define CJS_Array   (1 << 5)

typedef struct cjs_item
{
    struct cjs_item *next;
    struct cjs_item *child;
    int type;
    double number;
    char *text;
} cjs_item;

typedef struct cjs_hooks
{
    void *(CJS_CDECL *malloc_fn)(size_t sz);
    void (CJS_CDECL *free_fn)(void *ptr);
} cjs_hooks;

typedef int cjs_bool;

CJS_PUBLIC(const char*) cjs_version(void);
CJS_PUBLIC(void) cjs_init_hooks(cjs_hooks* hooks);
CJS_PUBLIC(cjs_item *) cjs_parse(const char *value);
CJS_PUBLIC(void) cjs_delete(cjs_item *item);
CJS_PUBLIC(int) cjs_array_size(const cjs_item *array);
CJS_PUBLIC(cjs_item *) cjs_array_item(const cjs_item *array, int index);
CJS_PUBLIC(cjs_bool) cjs_is_number(const cjs_item * const item);
CJS_PUBLIC(double) cjs_number_value(const cjs_item * const item);

#define cjs_array_for_each(element, array) for(element = (array != NULL) ? (array)->child : NULL; element != NULL; element = element->next)

#ifdef __cplusplus
}
#endif

#endif
