-- Takes one lease under an upstream's fleet total (a limit lowered by back-pressure), if
-- fewer than the total are held. A lease is a zset member -> expiry ms on Redis's own clock
-- (TIME): a process that dies without giving it back loses it when the lease runs out.
-- Every probe-after x total x wait leases granted at one total, the total grows by one
-- (the fleet probes above it, as the engine does above its known-good level).
-- KEYS[1] leases zset, KEYS[2] fleet total, KEYS[3] growth hash (see pace_publish.lua)
-- ARGV[1] lease ms, ARGV[2] lease id, ARGV[3] probe after, ARGV[4] total ttl ms,
-- ARGV[5] most total, ARGV[6] most probe wait multiplier
-- Returns 1 (taken), 0 (the fleet holds the total) or 2 (no total: no lease needed).
local function int(v)
  if v and string.match(v, '^%d+$') then
    return tonumber(v)
  end
  return nil
end
local total = int(redis.call('GET', KEYS[2]))
if total == nil or total < 1 then
  return 2
end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local lease = tonumber(ARGV[1])
-- Run out, or further out than any lease is taken for (not a warden's: it would hold a
-- part of the total for ever).
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
redis.call('ZREMRANGEBYSCORE', KEYS[1], '(' .. (now + lease), '+inf')
if redis.call('ZCARD', KEYS[1]) >= total then
  return 0
end
redis.call('ZADD', KEYS[1], now + lease, ARGV[2])
redis.call('PEXPIRE', KEYS[1], lease * 2)
local n = (int(redis.call('HGET', KEYS[3], 'n')) or 0) + 1
local wait = math.max(1, math.min(int(redis.call('HGET', KEYS[3], 'wait')) or 1, tonumber(ARGV[6])))
if n >= tonumber(ARGV[3]) * math.min(total, tonumber(ARGV[5])) * wait then
  if total < tonumber(ARGV[5]) then
    redis.call('SET', KEYS[2], total + 1, 'PX', tonumber(ARGV[4]))
  end
  n = 0
end
redis.call('HSET', KEYS[3], 'n', n)
redis.call('PEXPIRE', KEYS[3], tonumber(ARGV[4]) * 2)
return 1
