-- bench/board-guess.lua - wrk script: guess the delete password of one
-- message over and over (wrong passwords only), as an attacker would, and
-- print one GUESS line with how the board answered (403 wrong password,
-- 429 limited, other).
-- Environment: BOARD_COOKIE, BOARD_TOKEN, BOARD_DELETE_PATH (e.g.
-- /board/mkdir/delete), BOARD_DELETE_NO (the message's number).
local cookie = os.getenv("BOARD_COOKIE") or ""
local token = os.getenv("BOARD_TOKEN") or ""
local path = os.getenv("BOARD_DELETE_PATH") or "/delete"
local no = os.getenv("BOARD_DELETE_NO") or "1"
local threads = {}
local counter = 0
-- per thread, read by done() through thread:get (so not local)
n403, n429, nother = 0, 0, 0

function setup(thread)
   table.insert(threads, thread)
end

function init(args)
   wrk.method = "POST"
   wrk.headers["Content-Type"] = "application/x-www-form-urlencoded"
   wrk.headers["Cookie"] = "board_csrf=" .. cookie
end

function request()
   counter = counter + 1
   local body = "no=" .. no .. "&password=guess-" .. counter .. "&token=" .. token
   return wrk.format("POST", path, nil, body)
end

function response(status, headers, body)
   if status == 403 then
      n403 = n403 + 1
   elseif status == 429 then
      n429 = n429 + 1
   else
      nother = nother + 1
   end
end

function done(summary, latency, requests)
   local a, b, c = 0, 0, 0
   for _, t in ipairs(threads) do
      a = a + (t:get("n403") or 0)
      b = b + (t:get("n429") or 0)
      c = c + (t:get("nother") or 0)
   end
   io.write(string.format(
      "GUESS requests=%d rps=%.1f wrong_403=%d limited_429=%d other=%d p50_us=%d\n",
      summary.requests, summary.requests / (summary.duration / 1e6), a, b, c,
      latency:percentile(50)))
end
