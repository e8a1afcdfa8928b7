-- wrk script for the soak's HTTP/1.1 keep-alive traffic: paces each connection
-- (SOAK_DELAY_MS between a response and the next request, so the rate is about
-- connections * 1000 / SOAK_DELAY_MS per second) and appends every answer that is
-- not 2xx/3xx to SOAK_FAIL_FILE as "epoch-seconds<TAB>status", so the report can
-- tell failures inside a backend-flap window from the others. Socket errors do
-- not reach Lua: they are in wrk's own summary.
local ffi = require("ffi")
ffi.cdef [[
typedef struct { long tv_sec; long tv_usec; } soak_timeval;
int gettimeofday(soak_timeval *tv, void *tz);
]]
local tv = ffi.new("soak_timeval")

local function now()
    ffi.C.gettimeofday(tv, nil)
    return tonumber(tv.tv_sec) + tonumber(tv.tv_usec) / 1e6
end

local pause = tonumber(os.getenv("SOAK_DELAY_MS") or "10")
local fail_path = os.getenv("SOAK_FAIL_FILE") or "/dev/null"
local out = nil

function delay()
    return pause
end

function response(status, headers, body)
    if status < 200 or status >= 400 then
        if out == nil then out = io.open(fail_path, "a") end
        out:write(string.format("%.6f\t%d\n", now(), status))
        out:flush()
    end
end
