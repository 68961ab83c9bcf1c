-- Reads shared cache values without ever sending more than a capped number of bytes each:
-- a value longer than the cap comes back cut to cap + 1 bytes, which the reader rejects
-- as too large (a stored value can be up to 512 MB; the reader must not receive it).
-- KEYS: the values' keys; ARGV[1] the cap's last byte index (cap, so cap + 1 bytes).
-- Returns one reply per key: the value (or its first cap + 1 bytes), or nil when the key
-- holds nothing, an empty string or something that is not a string.
local out = {}
for i, k in ipairs(KEYS) do
  local v = redis.pcall('GETRANGE', k, 0, ARGV[1])
  if type(v) == 'string' and #v > 0 then out[i] = v else out[i] = false end
end
return out
