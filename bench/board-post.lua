-- bench/board-post.lua - wrk script: POST new messages to a board with a
-- cookie/token pair fetched beforehand (as a browser would have after
-- loading the form), each with a unique body, then print one RESULT line.
-- Environment: BOARD_COOKIE, BOARD_TOKEN, BOARD_POST_PATH (e.g.
-- /board/mkdir/post), BOARD_POST_INTERVAL_MS (pause of each connection
-- before each post; 0, the default, posts as fast as answers come).
local cookie = os.getenv("BOARD_COOKIE") or ""
local token = os.getenv("BOARD_TOKEN") or ""
local path = os.getenv("BOARD_POST_PATH") or "/post"
local interval = tonumber(os.getenv("BOARD_POST_INTERVAL_MS") or "0") or 0
local counter = 0
local next_id = 0

function setup(thread)
   next_id = next_id + 1
   thread:set("id", next_id)
end

function init(args)
   wrk.method = "POST"
   wrk.headers["Content-Type"] = "application/x-www-form-urlencoded"
   wrk.headers["Cookie"] = "board_csrf=" .. cookie
end

function delay()
   return interval
end

function request()
   counter = counter + 1
   local body = "name=bench&subject=benchmark&password=&token=" .. token ..
      "&body=benchmark+post+" .. tostring(id) .. "-" .. counter
   return wrk.format("POST", path, nil, body)
end

function done(summary, latency, requests)
   local e = summary.errors
   io.write(string.format(
      "RESULT requests=%d duration_us=%d rps=%.1f p50_us=%d p99_us=%d max_us=%d status_errors=%d socket_errors=%d\n",
      summary.requests, summary.duration, summary.requests / (summary.duration / 1e6),
      latency:percentile(50), latency:percentile(99), latency.max,
      e.status, e.connect + e.read + e.write + e.timeout))
end
