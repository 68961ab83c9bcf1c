-- May an attempt go to this upstream now? Atomic: a half-open upstream hands out at most
-- halfOpenProbes probe leases across the fleet; a lease whose holder died expires.
-- KEYS[1] state hash (state, until, level), KEYS[2] probe leases (zset: id -> expiry ms)
-- ARGV[1] halfOpenProbes, ARGV[2] probe lease ms, ARGV[3] probe id
-- Returns {state, ms until a probe may go, granted probe (0/1)}.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local st = redis.call('HMGET', KEYS[1], 'state', 'until')
local state = st[1] or 'closed'
if state == 'closed' then return {'closed', 0, 0} end
if state == 'forced' then return {'forced', 0, 0} end
local untl = tonumber(st[2]) or 0
if now < untl then return {'open', untl - now, 0} end
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now)
if redis.call('ZCARD', KEYS[2]) < tonumber(ARGV[1]) then
  local lease = tonumber(ARGV[2])
  redis.call('ZADD', KEYS[2], now + lease, ARGV[3])
  redis.call('PEXPIRE', KEYS[2], lease * 2)
  return {'half_open', 0, 1}
end
return {'half_open', 0, 0}
