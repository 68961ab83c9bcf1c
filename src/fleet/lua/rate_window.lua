-- An upstream's rate-limit windows, one account for the whole fleet (docs/design.md section 13).
-- Times are this server's own clock (TIME), read and compared only here: processes send
-- and receive durations, never their wall clocks.
-- KEYS[1] requests window (hash), KEYS[2] tokens window (hash),
-- KEYS[3] attempts in flight (zset: lease id -> expiry ms)
-- ARGV[1] 'take' or 'settle', ARGV[2] lease id ('' none), ARGV[3] lease ms,
-- ARGV[4] the longest window ms warden paces by
-- take:   ARGV[5] tokens the attempt needs.
--         Returns {1, 0, 0} taken, or {2 requests | 3 tokens, ms to the reset, window ms}.
-- settle: ARGV[5..8] the answer's requests window: present (1/0), limit (0 none),
--         remaining, ms to its reset; ARGV[9..12] its tokens window, the same. Returns 1.
-- A window: lim (absent: not known), left (what is left, attempts taken counted), reset
-- (server ms), len (its length ms).
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local maxlen = tonumber(ARGV[4])
local MAXCOUNT = 1000000000000

local function kind(key)
  return redis.call('TYPE', key)['ok']
end

-- The window as stored, bounded: whatever is not a window warden could have written
-- (another type, garbage, a length past maxlen, a reset further than one window away) is
-- deleted and no window; what is left is bounded to 0..limit.
local function load(key)
  local k = kind(key)
  if k == 'none' then return nil end
  if k ~= 'hash' then redis.call('DEL', key) return nil end
  local v = redis.call('HMGET', key, 'lim', 'left', 'reset', 'len')
  local w = {lim = tonumber(v[1]), left = tonumber(v[2]), reset = tonumber(v[3]),
             len = tonumber(v[4])}
  if not (w.left and w.reset and w.len and w.len >= 1 and w.len <= maxlen
          and w.reset <= now + w.len and w.reset > now - 1000000000) then
    redis.call('DEL', key)
    return nil
  end
  w.len = math.floor(w.len)
  if not (w.lim and w.lim >= 1 and w.lim <= MAXCOUNT) then w.lim = nil end
  local top = w.lim or MAXCOUNT
  if not (w.left >= 0) then w.left = 0 end
  if w.left > top then w.left = top end
  w.left = math.floor(w.left)
  if w.lim then w.lim = math.floor(w.lim) end
  return w
end

-- Past its reset a window is whole again when its limit is known (the first process
-- after the reset opens the next one); else it is forgotten.
local function roll(w)
  if w == nil or now < w.reset then return w end
  if w.lim == nil then return nil end
  local n = math.floor((now - w.reset) / w.len) + 1
  w.reset = w.reset + n * w.len
  w.left = w.lim
  return w
end

local function num(x)
  return string.format('%.0f', x)
end

-- The limit and length outlive the reset by a few windows, for the next one.
local function save(key, w)
  if w == nil then
    redis.call('DEL', key)
    return
  end
  if w.lim then
    redis.call('HSET', key, 'lim', num(w.lim))
  else
    redis.call('HDEL', key, 'lim')
  end
  redis.call('HSET', key, 'left', num(w.left), 'reset', num(w.reset), 'len', num(w.len))
  redis.call('PEXPIRE', key, num(math.max(1, w.reset - now + 4 * w.len)))
end

-- Attempts in flight across the fleet; expired leases (a process that died) dropped.
local k = kind(KEYS[3])
if k ~= 'none' and k ~= 'zset' then redis.call('DEL', KEYS[3]) end
redis.call('ZREMRANGEBYSCORE', KEYS[3], '-inf', now)

-- An answer's reading merged with what was known, as a process merges its own: one of
-- an older window changes nothing, one of the same window only lowers what is left, one
-- of a newer window replaces it. `taken`: attempts in flight (not yet counted by it).
local function merge(key, at, taken)
  if ARGV[at] ~= '1' then return end
  local lim, rem, after = tonumber(ARGV[at + 1]), tonumber(ARGV[at + 2]), tonumber(ARGV[at + 3])
  local before = load(key)
  local len = after
  if before and before.len > len then len = before.len end
  if len < 1 then len = 1 end
  local read = {left = math.max(rem - taken, 0), reset = now + after, len = math.min(len, maxlen)}
  if lim > 0 then read.lim = lim end
  local known = roll(before)
  if known == nil or read.reset > known.reset + read.len / 2 then
    save(key, read)
  elseif read.reset + read.len / 2 < known.reset then
    known.len = read.len
    save(key, known)
  else
    read.left = math.min(known.left, read.left)
    save(key, read)
  end
end

if ARGV[1] == 'take' then
  local need = math.max(tonumber(ARGV[5]), 1)
  local req, tok = roll(load(KEYS[1])), roll(load(KEYS[2]))
  -- An attempt larger than the whole window (a small tokens-per-minute account) is never
  -- covered by a reset: it needs the window whole, not more than whole.
  local cover = need
  if tok and tok.lim and cover > tok.lim then cover = tok.lim end
  local short = nil
  if req and req.left < 1 then
    short = {2, req.reset - now, req.len}
  elseif tok and tok.left < cover then
    short = {3, tok.reset - now, tok.len}
  end
  if short == nil then
    if req then req.left = req.left - 1 end
    if tok then tok.left = math.max(tok.left - need, 0) end
  end
  save(KEYS[1], req)
  save(KEYS[2], tok)
  if short then return short end
  local lease = tonumber(ARGV[3])
  redis.call('ZADD', KEYS[3], num(now + lease), ARGV[2])
  redis.call('PEXPIRE', KEYS[3], num(lease * 2))
  return {1, 0, 0}
end

if ARGV[2] ~= '' then redis.call('ZREM', KEYS[3], ARGV[2]) end
local taken = redis.call('ZCARD', KEYS[3])
merge(KEYS[1], 5, taken)
merge(KEYS[2], 9, 0)
return 1
