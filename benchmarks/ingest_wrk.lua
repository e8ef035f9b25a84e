-- Load generator for benchmarks/ingest_http.py: POSTs every body of $BENCH_BODIES (separated by
-- the byte 0x1e, which JSON text never holds raw) once, over wrk's connections, then stops.
-- Says "all answered" on stderr then (the harness interrupts wrk, which ends its sleep).
-- Prints one JSON line: seconds, responses, accepted verdicts, non-200s, latency percentiles.
local bodies, n = {}, 0
do
  local f = assert(io.open(os.getenv("BENCH_BODIES"), "rb"))
  local data = f:read("*a")
  f:close()
  for b in string.gmatch(data, "[^\30]+") do
    n = n + 1
    bodies[n] = b
  end
end
local headers = { ["Content-Type"] = os.getenv("BENCH_CTYPE") }
local sent, got = 0, 0
accepted, bad = 0, 0 -- globals: done() reads them with thread:get()
local verified = false
local threads = {}

function setup(thread)
  table.insert(threads, thread)
end

function delay()
  -- every body is out: park this connection until the last answers are in (then stop)
  if sent >= n then return 600000 end
  return 0
end

function request()
  -- wrk 4 calls request() once on thread 0 to check the script, and never sends that one
  if not verified then
    verified = true
    return wrk.format("POST", "/v1/games", headers, bodies[1])
  end
  sent = sent + 1
  if sent > n then -- two connections passed delay() at the last body: do not send it twice
    return wrk.format("GET", "/v1/schema")
  end
  return wrk.format("POST", "/v1/games", headers, bodies[sent])
end

function response(status, hdrs, body)
  if string.sub(body, 1, 11) ~= '{"results":' and status == 200 then return end -- /v1/schema
  got = got + 1
  if status ~= 200 then bad = bad + 1 end
  local _, k = string.gsub(body, '"verdict":"accepted"', "")
  accepted = accepted + k
  if got >= n then
    -- wrk's main thread sleeps for -d whatever its threads do: the harness sends SIGINT
    io.stderr:write("all answered\n")
    io.stderr:flush()
    wrk.thread:stop()
  end
end

function done(summary, latency, requests)
  local acc, nb = 0, 0
  for _, t in ipairs(threads) do
    acc = acc + t:get("accepted")
    nb = nb + t:get("bad")
  end
  io.write(string.format(
    '{"seconds": %.6f, "responses": %d, "accepted": %d, "bad": %d, "errors": %d, ' ..
    '"p50": %.6f, "p95": %.6f, "p99": %.6f}\n',
    summary.duration / 1e6, summary.requests, acc, nb,
    summary.errors.connect + summary.errors.read + summary.errors.write +
    summary.errors.status + summary.errors.timeout,
    latency:percentile(50) / 1e6, latency:percentile(95) / 1e6, latency:percentile(99) / 1e6))
end
