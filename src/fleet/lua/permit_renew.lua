-- Extends a held permit's lease while its attempt runs.
-- KEYS[1] permits zset; ARGV[1] lease ms, ARGV[2] permit id
-- Returns 1 (renewed) or 0 (the lease had run out and the permit is gone).
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local lease = tonumber(ARGV[1])
if redis.call('ZSCORE', KEYS[1], ARGV[2]) then
  redis.call('ZADD', KEYS[1], 'XX', now + lease, ARGV[2])
  redis.call('PEXPIRE', KEYS[1], lease * 2)
  return 1
end
return 0
