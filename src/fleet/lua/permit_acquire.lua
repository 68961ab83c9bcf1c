-- Takes one of an upstream's fleet permits if fewer than the cap are held. A permit is a
-- lease (zset member -> expiry ms, server clock): a process that dies without giving it
-- back loses it when the lease runs out.
-- KEYS[1] permits zset; ARGV[1] cap, ARGV[2] lease ms, ARGV[3] permit id
-- Returns 1 (taken) or 0 (all held).
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local lease = tonumber(ARGV[2])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
if redis.call('ZCARD', KEYS[1]) < tonumber(ARGV[1]) then
  redis.call('ZADD', KEYS[1], now + lease, ARGV[3])
  redis.call('PEXPIRE', KEYS[1], lease * 2)
  return 1
end
return 0
