/* etcd_absent.c - the etcd backend's placeholder in a build without
 * libcurl and json-c (etcd.mk): its name and forms, and why its spaces
 * are refused (backend.h, THE CONTRACT). */
#include "backend.h"
#include "etcd_url.h"

static const char *const etcd_forms[] = {DL_ETCD_SPACE_FORMS, NULL};

const dl_backend dl_etcd_backend = {
    .name = "etcd",
    .forms = etcd_forms,
    .spec_has_scheme = true,
    .absent = "this build of dirlock has no etcd support (install libcurl4-openssl-dev and libjson-c-dev and "
              "rebuild)",
};
