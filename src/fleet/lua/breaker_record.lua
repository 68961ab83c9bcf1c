-- Records one finished attempt into the upstream's shared rolling window and takes the
-- breaker's decision from the fleet's window (docs/design.md rule 8, across processes).
-- KEYS[1] state hash (state, until, level), KEYS[2] calls zset, KEYS[3] failures zset,
-- KEYS[4] probe leases zset
-- ARGV[1] kind: ok | fail | force | cancel, ARGV[2] probe (1/0), ARGV[3] probe id,
-- ARGV[4] window ms, ARGV[5] minCalls, ARGV[6] failureRate, ARGV[7] openFor ms,
-- ARGV[8] unique member id, ARGV[9] how long a forced open lasts (ms)
-- Returns {state, ms until a probe may go, calls in window, failures in window}.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local kind, probe = ARGV[1], ARGV[2] == '1'
local window, min_calls = tonumber(ARGV[4]), tonumber(ARGV[5])
local rate, open_for = tonumber(ARGV[6]), tonumber(ARGV[7])
local st = redis.call('HMGET', KEYS[1], 'state', 'until', 'level')
local state = st[1] or 'closed'
local untl = tonumber(st[2]) or 0
local level = tonumber(st[3]) or 0

local function view()
  if state == 'open' then
    if now < untl then return {'open', untl - now, 0, 0} end
    return {'half_open', 0, 0, 0}
  end
  return {state, 0, 0, 0}
end

local function open(lvl, calls, fails)
  local factor = math.min(2 ^ math.min(lvl - 1, 3), 8)
  local wait = open_for * factor
  redis.call('HSET', KEYS[1], 'state', 'open', 'until', now + wait, 'level', lvl)
  redis.call('PEXPIRE', KEYS[1], wait + window)
  redis.call('DEL', KEYS[2], KEYS[3], KEYS[4])
  return {'open', wait, calls, fails}
end

if kind == 'cancel' then
  if probe then redis.call('ZREM', KEYS[4], ARGV[3]) end
  return view()
end
if kind == 'force' then
  if state ~= 'forced' then
    redis.call('HSET', KEYS[1], 'state', 'forced')
    redis.call('HDEL', KEYS[1], 'until', 'level')
    redis.call('PEXPIRE', KEYS[1], tonumber(ARGV[9]))
    redis.call('DEL', KEYS[2], KEYS[3], KEYS[4])
  end
  return {'forced', 0, 0, 0}
end
if state == 'forced' then return view() end
if state == 'open' and probe and now >= untl then
  -- A half-open probe's verdict closes or re-opens the breaker for the whole fleet.
  if kind == 'fail' then return open(level + 1, 0, 0) end
  redis.call('DEL', KEYS[1], KEYS[2], KEYS[3], KEYS[4])
  return {'closed', 0, 0, 0}
end
if state ~= 'closed' then return view() end -- late results change nothing
local member = ARGV[8]
redis.call('ZADD', KEYS[2], now, member)
if kind == 'fail' then redis.call('ZADD', KEYS[3], now, member) end
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', '(' .. (now - window))
redis.call('ZREMRANGEBYSCORE', KEYS[3], '-inf', '(' .. (now - window))
redis.call('PEXPIRE', KEYS[2], window)
redis.call('PEXPIRE', KEYS[3], window)
local calls = redis.call('ZCARD', KEYS[2])
local fails = redis.call('ZCARD', KEYS[3])
if calls >= min_calls and fails >= rate * calls then return open(1, calls, fails) end
return {'closed', 0, calls, fails}
