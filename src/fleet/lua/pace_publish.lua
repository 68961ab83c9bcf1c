-- Publishes back-pressure one process saw on an upstream, for the others to read at
-- admission. Durations only (PX, PTTL): no wall clock is compared across hosts.
-- KEYS[1] lowered-limit key, KEYS[2] pause key
-- ARGV[1] limit (0: none), ARGV[2] limit ttl ms, ARGV[3] pause ms (0: none)
-- A lower limit replaces a higher one; a longer pause replaces a shorter one.
local lim = tonumber(ARGV[1])
if lim > 0 then
  local cur = tonumber(redis.call('GET', KEYS[1]))
  if cur == nil or lim < cur then
    redis.call('SET', KEYS[1], lim, 'PX', tonumber(ARGV[2]))
  end
end
local pause = tonumber(ARGV[3])
if pause > 0 and redis.call('PTTL', KEYS[2]) < pause then
  redis.call('SET', KEYS[2], 1, 'PX', pause)
end
return 1
