# binding.gyp - node-gyp's recipe for the addon, build/Release/dirlock.node:
# src/dirlock_node.c (Node-API, C) over the dirlock library, found with
# pkg-config by tools/dirlock-config.js: the shared library it names, with
# the runpath its answer gives (the source tree's build directory, or the
# installed LIBDIR where the dynamic linker does not look by itself).
{
  "targets": [
    {
      "target_name": "dirlock",
      "sources": ["src/dirlock_node.c"],
      "cflags_c": [
        "-std=c11", "-D_GNU_SOURCE", "-Wall", "-Wextra", "-Werror",
        "<!@(node tools/dirlock-config.js --cflags)"
      ],
      "libraries": ["<!@(node tools/dirlock-config.js --libs)"]
    }
  ]
}
