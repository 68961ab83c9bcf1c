-- Publishes back-pressure one process saw on an upstream, for the others to read at
-- admission. Durations and Redis's own clock only (PX, PTTL, TIME): no host's clock.
-- KEYS[1] fleet total, KEYS[2] pause, KEYS[3] members set, KEYS[4] leases zset,
-- KEYS[5] growth hash (n: leases granted at this total, wait: probe wait multiplier,
-- at: when the total was last lowered, server ms)
-- ARGV[1] 1: a limit was lowered by back-pressure (0: none), ARGV[2] total ttl ms,
-- ARGV[3] pause ms (0: none), ARGV[4] load key prefix (a member's key is it .. member),
-- ARGV[5] decrease factor, ARGV[6] most members read, ARGV[7] most one load counts,
-- ARGV[8] one round ms, ARGV[9] most probe wait multiplier
-- The fleet total is what the fleet had in flight times the decrease factor, at least 1:
-- the leases held under the total when one is set, else the sum of each live member's
-- load as it last reported it (a member whose load key ran out is gone). A lower total
-- replaces a higher one, once per round (a burst of 429 for one overshoot is one signal),
-- and doubles the wait before the next probe above it. A longer pause replaces a shorter.
-- Returns the total published (0: none).
local function int(v)
  if v and string.match(v, '^%d+$') then
    return tonumber(v)
  end
  return nil
end
local published = 0
if tonumber(ARGV[1]) > 0 then
  local t = redis.call('TIME')
  local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
  local at = int(redis.call('HGET', KEYS[5], 'at'))
  local cur = int(redis.call('GET', KEYS[1]))
  if cur ~= nil and cur < 1 then
    cur = nil
  end
  if cur == nil or at == nil or at > now or now - at >= tonumber(ARGV[8]) then
    local most = tonumber(ARGV[7])
    redis.call('ZREMRANGEBYSCORE', KEYS[4], '-inf', now)
    local sum = 0
    if cur ~= nil then
      sum = redis.call('ZCARD', KEYS[4])
    end
    if sum == 0 then
      for _, m in ipairs(redis.call('SRANDMEMBER', KEYS[3], tonumber(ARGV[6]))) do
        local n = int(redis.call('GET', ARGV[4] .. m))
        if n == nil then
          redis.call('SREM', KEYS[3], m)
        else
          sum = sum + math.min(n, most)
        end
      end
    end
    sum = math.min(sum, tonumber(ARGV[6]) * most)
    local total = math.max(1, math.floor(sum * tonumber(ARGV[5])))
    if cur == nil or total < cur then
      local wait = int(redis.call('HGET', KEYS[5], 'wait')) or 1
      wait = math.min(math.max(wait * 2, 1), tonumber(ARGV[9]))
      if cur == nil then
        wait = 1
      end
      redis.call('SET', KEYS[1], total, 'PX', tonumber(ARGV[2]))
      redis.call('HSET', KEYS[5], 'n', 0, 'wait', wait, 'at', now)
      redis.call('PEXPIRE', KEYS[5], tonumber(ARGV[2]) * 2)
      published = total
    end
  end
end
local pause = tonumber(ARGV[3])
if pause > 0 and redis.call('PTTL', KEYS[2]) < pause then
  redis.call('SET', KEYS[2], 1, 'PX', pause)
end
return published
