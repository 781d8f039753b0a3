-- pacer's token buckets in Redis: one script for every operation, so that
-- each is one round trip and atomic across all the buckets it touches.
--
-- KEYS[i]  the hash of demand i: t = tokens, s = stamp (microseconds; the
--          last refill, or the start of the current window), n = units taken
--          from it ever, by take and by a positive adjust (store.Decision.
--          Taken): a refund, an undo, a clamp and a negative adjust leave it,
--          and a key written by an earlier version, without it, starts at 0
-- ARGV[1]  "take", "peek", "level", "refund", "undo", "adjust" or "clamp"
-- ARGV[2]  now in microseconds, or "" to use the server's TIME
-- ARGV[3+5(i-1)...]  demand i: rate (units/s), burst, window (µs), cost, floor
--          (for "clamp", cost is the level to clamp to)
-- ARGV[3+5n]  for "undo": the time a "take" of these demands replied
--
-- "peek" is a take that takes nothing: how long the take would wait. "level"
-- reads what the first bucket holds, brought up to now, and writes nothing
-- (store.LevelReader). "undo"
-- is the refund of a take whose other demands, in other slots of a Cluster,
-- were denied: a window bucket whose window has started again since that
-- take gets nothing back, since what was taken went with the old window.
-- "adjust" settles a call (pacer.Adjuster): a positive cost is taken
-- whatever the bucket holds, so it may fall below zero; a negative one is
-- given back, up to the burst.
--
-- The arithmetic is pacer's bucketLevel (store.go): refill is
-- tokens = min(burst, tokens + elapsed*rate); a window bucket is full again
-- once its window has passed; a lowered burst applies at once.
--
-- Replies are arrays of integers (Redis truncates a Lua number to an
-- integer, and every number replied is one: times in µs, a wait rounded up
-- to ns), which the client reads without parsing or allocating strings:
-- take  -> {1, now in µs, n of the first demand in millionths of a unit}
--          granted ({1, now} if the first demand costs nothing), or
--          {0, blocked (0-based), wait in ns or -1 for never}
-- peek  -> as take, without the now
-- level -> the level, a string as '%.17g' writes it (exact, where an integer
--          reply would truncate it): a bucket not held is full, its burst
-- other -> {1}
--
-- A wait saturates at LONGEST, pacer.LongestWait (2^62 ns): a rate too small
-- to divide by, or a window of centuries, must not overflow the reply. A TTL
-- saturates at MAX_TTL, a hundred years, which PEXPIRE accepts.
local LONGEST = 4611686018427387904
local MAX_TTL = 3155760000000

local mode = ARGV[1]
local now
local server = ARGV[2] == ''
local clock -- TIME's reply: seconds and microseconds, as strings
if server then
  clock = redis.call('TIME')
  now = tonumber(clock[1]) * 1000000 + tonumber(clock[2])
else
  now = tonumber(ARGV[2])
end

-- The TTL of a write, in milliseconds, given ms, the time until the bucket
-- is full again (nil: it never refills, so keep it a day, then forgive): at
-- least a second.
local function ttl_of(ms)
  return math.min(MAX_TTL, math.max(1000, math.ceil(ms or 86400000)))
end

-- A total as the reply carries it: in millionths of a unit, rounded, since
-- Redis truncates a Lua number to an integer.
local function units(n)
  return math.floor(n * 1000000 + 0.5)
end

-- The fast path: a take of one bucket, which is most calls. It is the take
-- below, for n = 1, written straight (the tables and closures that let the
-- general path take any number of buckets cost about a fifth of the
-- script), and on Redis's clock it leaves the key's TTL alone while the key
-- outlives the bucket's refill: PTTL, a read, costs Redis less than
-- PEXPIRE, a write that on a Cluster each replica applies too (as MULTI,
-- HSET, PEXPIREAT, EXEC, where a lone HSET is one command), and a hot
-- bucket, whose TTL is the one-second minimum, needs one PEXPIRE a second.
-- HSET keeps a key's TTL, and the TTL is read in the script that writes,
-- so nothing comes between. With the caller's clock, whose times are not
-- Redis's, every take sets the TTL, as the general path does. The bucket's
-- fields and what they mean are the general path's, so that the two, and
-- earlier versions, read each other's buckets; TestFastPathAgrees runs the
-- same decisions through both. (Instructions Redis spends a call, one hot
-- bucket, valgrind: this path 79k, the general path 102k, redis_rate's
-- script when it writes 74k; see BENCHMARKS.md.)
if mode == 'take' and #KEYS == 1 then
  local MARGIN = 10 -- ms, for Redis's rounding to the millisecond
  local key = KEYS[1]
  local rate, burst, window = tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5])
  local cost, floor = tonumber(ARGV[6]), tonumber(ARGV[7])
  if not (cost > 0) then
    return {1, now}
  end
  local v = redis.call('HMGET', key, 't', 's', 'n')
  local tok, st, taken = tonumber(v[1]), tonumber(v[2]), tonumber(v[3]) or 0
  local held = tok ~= nil and st ~= nil
  if not held then
    tok, st = burst, now
  end
  if window > 0 then
    if now - st >= window then
      tok, st = burst, now
    end
  elseif now > st then
    tok = tok + (now - st) / 1e6 * rate
    st = now
  end
  if tok > burst then
    tok = burst
  end
  local need = cost + floor
  if tok < need then
    local wait
    if need > burst then
      wait = -1
    elseif window > 0 then
      wait = (window - (now - st)) * 1000
    elseif rate <= 0 then
      wait = -1
    else
      wait = math.ceil((need - tok) / rate * 1e9)
    end
    if wait > LONGEST then
      wait = LONGEST
    end
    if wait ~= 0 then
      return {0, 0, wait}
    end
  end
  tok = tok - cost
  taken = taken + cost
  local ms -- until full again
  if window > 0 then
    ms = (st + window - now) / 1000
  elseif tok >= burst then
    redis.call('DEL', key)
    return {1, now, units(taken)}
  elseif rate > 0 then
    ms = (burst - tok) / rate * 1000
  end
  if st == now and clock then
    -- now as TIME wrote it: formatting a number of 16 digits ('%.17g') costs
    -- Redis more than joining two strings.
    redis.call('HSET', key, 't', tok, 's', clock[1] .. string.sub('00000' .. clock[2], -6), 'n', taken)
  else
    redis.call('HSET', key, 't', tok, 's', st, 'n', taken)
  end
  if not (server and held and ms and redis.call('PTTL', key) >= ms + MARGIN) then
    redis.call('PEXPIRE', key, ttl_of(ms))
  end
  return {1, now, units(taken)}
end

local n = #KEYS
local rate, burst, window, cost, floor = {}, {}, {}, {}, {}
local tokens, stamp, taken = {}, {}, {}

for i = 1, n do
  local a = 3 + 5 * (i - 1)
  rate[i], burst[i], window[i] = tonumber(ARGV[a]), tonumber(ARGV[a + 1]), tonumber(ARGV[a + 2])
  cost[i], floor[i] = tonumber(ARGV[a + 3]), tonumber(ARGV[a + 4])
end

-- level brings bucket i up to now; a bucket never seen starts full.
local function level(i)
  local v = redis.call('HMGET', KEYS[i], 't', 's', 'n')
  local tok, st = tonumber(v[1]), tonumber(v[2])
  taken[i] = tonumber(v[3]) or 0
  if tok == nil or st == nil then
    tok, st = burst[i], now
  end
  if window[i] > 0 then
    if now - st >= window[i] then
      tok, st = burst[i], now
    end
  elseif now > st then
    tok = tok + (now - st) / 1e6 * rate[i]
    st = now
  end
  if tok > burst[i] then
    tok = burst[i]
  end
  tokens[i], stamp[i] = tok, st
end

-- save writes bucket i back, to expire when it would be full again: a full
-- bucket is the same as no bucket, so idle buckets disappear, and their
-- totals with them. counted says the total grew, and is written too.
local function save(i, counted)
  local tok, st = tokens[i], stamp[i]
  local ms -- until full again
  if window[i] > 0 then
    ms = (st + window[i] - now) / 1000
  elseif tok >= burst[i] then
    redis.call('DEL', KEYS[i])
    return
  elseif rate[i] > 0 then
    ms = (burst[i] - tok) / rate[i] * 1000
  end
  -- redis.call writes a number as '%.17g' would, which reads back the same
  -- double, without making a Lua string of it first.
  if counted then
    redis.call('HSET', KEYS[i], 't', tok, 's', st, 'n', taken[i])
  else
    redis.call('HSET', KEYS[i], 't', tok, 's', st)
  end
  redis.call('PEXPIRE', KEYS[i], ttl_of(ms))
end

if mode == 'take' or mode == 'peek' then
  local blocked, longest = -1, 0
  for i = 1, n do
    if cost[i] > 0 then
      level(i)
      local need = cost[i] + floor[i]
      local wait = 0
      if tokens[i] < need then
        if need > burst[i] then
          wait = -1
        elseif window[i] > 0 then
          wait = (window[i] - (now - stamp[i])) * 1000
        elseif rate[i] <= 0 then
          wait = -1
        else
          wait = math.ceil((need - tokens[i]) / rate[i] * 1e9)
        end
        if wait > LONGEST then
          wait = LONGEST
        end
      end
      -- The longest wait blocks; never is the longest; ties keep the first.
      if wait ~= 0 and longest ~= -1 and (blocked == -1 or wait == -1 or wait > longest) then
        blocked, longest = i, wait
      end
    end
  end
  if blocked ~= -1 then
    return {0, blocked - 1, longest}
  end
  if mode == 'peek' then
    return {1}
  end
  for i = 1, n do
    if cost[i] > 0 then
      tokens[i] = tokens[i] - cost[i]
      taken[i] = taken[i] + cost[i]
      save(i, true)
    end
  end
  if cost[1] > 0 then
    return {1, now, units(taken[1])}
  end
  return {1, now}
elseif mode == 'level' then
  level(1)
  return string.format('%.17g', tokens[1])
elseif mode == 'refund' or mode == 'undo' then
  local took = tonumber(ARGV[3 + 5 * n])
  for i = 1, n do
    if cost[i] > 0 then
      level(i)
      if mode == 'refund' or window[i] <= 0 or stamp[i] <= took then
        tokens[i] = math.min(tokens[i] + cost[i], burst[i])
        save(i)
      end
    end
  end
  return {1}
elseif mode == 'adjust' then
  for i = 1, n do
    if cost[i] ~= 0 then
      level(i)
      tokens[i] = math.min(tokens[i] - cost[i], burst[i])
      if cost[i] > 0 then
        taken[i] = taken[i] + cost[i]
      end
      save(i, cost[i] > 0)
    end
  end
  return {1}
elseif mode == 'clamp' then
  for i = 1, n do
    level(i)
    if tokens[i] > cost[i] then
      tokens[i] = cost[i]
    end
    save(i)
  end
  return {1}
end
return redis.error_reply('pacer: unknown mode ' .. tostring(mode))
