-- wrk script for scripts/trace-nginx-pipelined.sh: each connection writes DEPTH GET requests at
-- once (HTTP/1.1 pipelining) and reads their responses; each wrk thread stops after
-- RESPONSES responses (the environment's WRK_RESPONSES, 4000 unless set), so the load is
-- bounded in count as well as by wrk's -d.
local depth = 4
local limit = tonumber(os.getenv("WRK_RESPONSES") or "4000")
local batch
local seen = 0

init = function(args)
   local r = {}
   for i = 1, depth do
      r[i] = wrk.format(nil, "/index.html")
   end
   batch = table.concat(r)
end

request = function()
   return batch
end

response = function(status, headers, body)
   seen = seen + 1
   if seen >= limit then
      wrk.thread:stop()
   end
end
