-- What the fleet says about an upstream at admission: its lowered limit (0: none) and how
-- long its pause still runs in ms (below 1: not paused).
-- KEYS[1] lowered-limit key, KEYS[2] pause key
local lim = tonumber(redis.call('GET', KEYS[1])) or 0
return {lim, redis.call('PTTL', KEYS[2])}
