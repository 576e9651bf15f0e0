/* json_c.h - json-c, opened the first time `dirlock status --json` needs
 * it (json_c.c), so that a dirlock that only takes locks loads no JSON
 * library.  The calls keep json-c's own types (its header); status.c
 * calls them through the table, by their names without "json_object_". */
#ifndef DIRLOCK_BIN_JSON_C_H
#define DIRLOCK_BIN_JSON_C_H

#include <json-c/json.h>
#include <stddef.h>

/* The json-c calls the command makes: X(field, json-c's name). */
#define JSON_C_CALLS(X)                                                                                      \
        X(new_object, json_object_new_object)                                                                \
        X(new_array, json_object_new_array)                                                                  \
        X(new_string, json_object_new_string)                                                                \
        X(new_boolean, json_object_new_boolean)                                                              \
        X(new_int64, json_object_new_int64)                                                                  \
        X(new_uint64, json_object_new_uint64)                                                                \
        X(new_double, json_object_new_double)                                                                \
        X(object_add, json_object_object_add)                                                                \
        X(object_get_ex, json_object_object_get_ex)                                                          \
        X(array_add, json_object_array_add)                                                                  \
        X(array_length, json_object_array_length)                                                            \
        X(array_get_idx, json_object_array_get_idx)                                                          \
        X(get_double, json_object_get_double)                                                                \
        X(put, json_object_put)                                                                              \
        X(to_json_string_ext, json_object_to_json_string_ext)                                                \
        X(set_serialization_double_format, json_c_set_serialization_double_format)

struct json_c {
#define JSON_C_FIELD(field, name) __typeof__(name) *field;
        JSON_C_CALLS(JSON_C_FIELD)
#undef JSON_C_FIELD
};

/* The calls, json-c opened on the first call (JSON_C_SONAME, the library
 * the build was made against); NULL when it cannot be opened, with why
 * (naming the library and the package that has it) in `why`. */
const struct json_c *json_c_open(char *why, size_t size);

#endif
