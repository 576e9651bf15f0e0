# binding.gyp - node-gyp's recipe for the addon, build/Release/dirlock.node:
# src/dirlock_node.c (Node-API, C) over the dirlock library, found with
# pkg-config by tools/dirlock-config.js.  A static library in its answer
# (the source tree's build/libdirlock.a) is linked in, so the addon then
# needs no libdirlock.so at run time.
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
