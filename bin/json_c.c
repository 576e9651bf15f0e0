/* json_c.c - json-c, opened on first use (json_c.h).  Only `status
 * --json` writes JSON, and every run of dirlock that takes a lock would
 * otherwise map json-c and resolve its symbols before it takes a lock.
 * The library opened is the one the build compiled against: its soname,
 * JSON_C_SONAME, is read from the development library by bin/bin.mk,
 * which also names Debian's package of it (JSON_C_PACKAGE). */
#include "json_c.h"

#include <dlfcn.h>
#include <link.h>
#include <stdio.h>

#if !defined JSON_C_SONAME || !defined JSON_C_PACKAGE
#error "JSON_C_SONAME and JSON_C_PACKAGE: json-c's soname and package (bin/bin.mk)"
#endif
_Static_assert(sizeof JSON_C_SONAME > 1,
               "bin/bin.mk found no soname for json-c (is libjson-c-dev installed? and objdump, from binutils?)");

const struct json_c *json_c_open(char *why, size_t size)
{
        static struct json_c calls;
        static const struct json_c *opened;
        if (opened != NULL)
                return opened;
        void *lib = dlopen(JSON_C_SONAME, RTLD_NOW | RTLD_LOCAL);
        if (lib == NULL) {
                snprintf(why, size, "--json needs json-c (%s, in Debian's package %s): %s", JSON_C_SONAME,
                         JSON_C_PACKAGE, dlerror());
                return NULL;
        }
        const char *missing = NULL;
#define JSON_C_FIND(field, name)                                                                             \
        *(void **)&calls.field = dlsym(lib, #name);                                                          \
        if (calls.field == NULL && missing == NULL)                                                          \
                missing = #name;
        JSON_C_CALLS(JSON_C_FIND)
#undef JSON_C_FIND
        if (missing != NULL) {
                struct link_map *map = NULL;
                const char *file = dlinfo(lib, RTLD_DI_LINKMAP, &map) == 0 && map != NULL && map->l_name[0]
                                       ? map->l_name
                                       : JSON_C_SONAME;
                snprintf(why, size, "--json needs json-c's %s, which %s lacks (Debian's package %s has it)",
                         missing, file, JSON_C_PACKAGE);
                dlclose(lib);
                return NULL;
        }
        opened = &calls; /* json-c stays open: its objects live until exit */
        return opened;
}
