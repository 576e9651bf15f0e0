-- bench/board-get.lua - wrk script: GET one page with a board_csrf cookie
-- (a returning visitor), then print one machine-readable RESULT line.
-- Environment: BOARD_COOKIE (cookie value, optional).
local cookie = os.getenv("BOARD_COOKIE")

function init(args)
   if cookie and cookie ~= "" then
      wrk.headers["Cookie"] = "board_csrf=" .. cookie
   end
end

function done(summary, latency, requests)
   local e = summary.errors
   io.write(string.format(
      "RESULT requests=%d duration_us=%d rps=%.1f p50_us=%d p99_us=%d max_us=%d status_errors=%d socket_errors=%d\n",
      summary.requests, summary.duration, summary.requests / (summary.duration / 1e6),
      latency:percentile(50), latency:percentile(99), latency.max,
      e.status, e.connect + e.read + e.write + e.timeout))
end
