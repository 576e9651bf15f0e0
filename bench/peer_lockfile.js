// peer_lockfile.js - worker of the side-by-side benchmark (bench/peers-run)
// for proper-lockfile (Debian node-proper-lockfile; mkdir DIR/counter.lock,
// mtime refreshed while held, stale after 10 s), used as its documentation
// shows: lock() with retries, then the release function it returns.  It
// has no blocking wait of its own: `retries` (node-retry) decides how it
// polls; here forever, from 1 ms doubling to at most 50 ms, randomized.
//
//     node peer_lockfile.js DIR START SECONDS OUT
//     node peer_lockfile.js DIR hold          (take, print "held", keep)
//     node peer_lockfile.js DIR wait TIMEOUT  (take once: seconds, or "timeout")
//
// Each acquisition: lock, read DIR/counter, add one, write it back, unlock.
// OUT gets one line per acquisition: "WAIT_US IN_TIME", as
// bench/peer_worker.c.
"use strict";
const fs = require("fs");
const path = require("path");
const lockfile = require("proper-lockfile");

const [dir, startArg, secondsArg, outPath] = process.argv.slice(2);
const start = parseFloat(startArg) * 1e3;
const end = start + parseFloat(secondsArg) * 1e3;
const counter = path.join(dir, "counter");
const wall = () => performance.timeOrigin + performance.now();
const retries = { forever: true, factor: 2, minTimeout: 1, maxTimeout: 50, randomize: true };

async function holdOrWait() {
    const asked = performance.now();
    if (startArg === "hold") {
        await lockfile.lock(counter, { retries, realpath: false });
        console.log("held");
        setInterval(() => {}, 1 << 30);
        return;
    }
    const timeout = parseFloat(secondsArg) * 1e3;
    for (;;) {
        try {
            const release = await lockfile.lock(counter, { realpath: false });
            console.log(((performance.now() - asked) / 1e3).toFixed(3));
            await release();
            return;
        } catch (e) {
            if (e.code !== "ELOCKED") throw e;
            if (performance.now() - asked > timeout) {
                console.log("timeout");
                process.exit(1);
            }
            await new Promise((r) => setTimeout(r, 50));
        }
    }
}

async function main() {
    if (startArg === "hold" || startArg === "wait") return holdOrWait();
    const lines = [];
    await new Promise((r) => setTimeout(r, Math.max(0, start - wall())));
    while (wall() < end) {
        const asked = performance.now();
        const release = await lockfile.lock(counter, { retries, realpath: false });
        const got = performance.now();
        let v = 0;
        try {
            v = parseInt(fs.readFileSync(counter, "utf8"), 10) || 0;
        } catch (e) {
            if (e.code !== "ENOENT") throw e;
        }
        fs.writeFileSync(counter, `${v + 1}\n`);
        await release();
        lines.push(`${Math.round((got - asked) * 1e3)} ${wall() <= end ? 1 : 0}\n`);
    }
    fs.writeFileSync(outPath, lines.join(""));
}

main().catch((e) => {
    console.error(`peer_lockfile: ${e.message}`);
    process.exit(1);
});
