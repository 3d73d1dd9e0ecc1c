package dev.layover.console;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * One window of {@code layover.time_series} as the console shows it: dense points (a bucket
 * without a row counted zero) of at most {@link #MAX_POINTS}, each point summing {@code step}
 * buckets (the gauges {@code due} and {@code waiting} keep their largest sample instead), one
 * series per counter and detail. The depth is sampled every 10 to 60 s (core's time series: less
 * often as the job table grows), and each sample marks its buckets ({@code sampled}): a point
 * without a marker and without a gauge row was not sampled, so the gauges carry the previous
 * point's value there, where a point with a marker and no gauge row had no such jobs (0). A window
 * without any marker (rows written before the markers) reads as before: no row, zero.
 *
 * @param at the database's time of the read
 * @param bucketSeconds 10, 60 or 3600
 * @param stepSeconds the width of one point
 * @param starts the start of each point, oldest first
 * @param series the series, in the order of {@link #ORDER} then by detail
 */
record TimeSeriesData(Instant at, int bucketSeconds, int stepSeconds, List<Instant> starts, List<Series> series) {

    /** The most points a window has; a longer window sums several buckets per point. */
    static final int MAX_POINTS = 360;

    /** The counters, in the order the API lists them. */
    static final List<String> ORDER = List.of("completed", "rate_limited", "rescheduled", "retried", "parked",
            "replayed", "due", "waiting", "endpoint_call", "chain_call");

    /**
     * One counter (and detail) over the window.
     *
     * @param counter e.g. {@code rescheduled}
     * @param detail e.g. the reschedule reason, or null
     * @param values one per point
     */
    record Series(String counter, String detail, long[] values) {

        long total() {
            long t = 0;
            for (long v : values) {
                t += v;
            }
            return t;
        }

        long max() {
            long m = 0;
            for (long v : values) {
                m = Math.max(m, v);
            }
            return m;
        }

        String label() {
            if (counter.equals("endpoint_call") && detail != null) {
                return detail; // an endpoint's calls by result
            }
            if (counter.equals("chain_call") && detail != null) {
                return "via " + detail; // a model key's calls by endpoint
            }
            return detail == null ? counter : counter + ": " + detail;
        }
    }

    /** The marker core's time series writes with each sample of the depth (job type and provider key ''). */
    static final String SAMPLED = "sampled";

    static boolean gauge(String counter) {
        return counter.equals("due") || counter.equals("waiting");
    }

    /**
     * @param rows {@code point} (from the oldest, 0), {@code counter}, {@code detail}, {@code amount}
     *     (per point: counts summed, gauges their largest) per row
     * @param at the database's time
     * @param current the start of the current bucket
     * @param bucketSeconds 10, 60 or 3600
     * @param buckets how many buckets the window has, the current one last
     */
    static TimeSeriesData of(ArrayNode rows, Instant at, Instant current, int bucketSeconds, int buckets) {
        int step = Math.max(1, (buckets + MAX_POINTS - 1) / MAX_POINTS);
        int points = (buckets + step - 1) / step;
        Instant first = current.minusSeconds((long) bucketSeconds * (points * step - 1));
        List<Instant> starts = new ArrayList<>(points);
        for (int i = 0; i < points; i++) {
            starts.add(first.plusSeconds((long) bucketSeconds * step * i));
        }
        Map<String, Series> byName = new LinkedHashMap<>();
        boolean[] sampled = new boolean[points];
        boolean anyMarker = false;
        for (JsonNode r : rows) {
            String counter = r.path("counter").asText();
            String detail = r.path("detail").isNull() ? null : r.path("detail").asText(null);
            long index = r.path("point").asLong();
            if (index < 0 || index >= points) {
                continue;
            }
            if (counter.equals(SAMPLED)) {
                sampled[(int) index] = true;
                anyMarker = true;
                continue;
            }
            if (gauge(counter)) {
                sampled[(int) index] = true; // a worker of an earlier version samples without a marker
            }
            Series s = byName.computeIfAbsent(counter + "\u0000" + detail, k -> new Series(counter, detail, new long[points]));
            long v = r.path("amount").asLong();
            int i = (int) index;
            s.values()[i] = gauge(counter) ? Math.max(s.values()[i], v) : s.values()[i] + v;
        }
        List<Series> series = new ArrayList<>(byName.values());
        if (anyMarker) {
            for (Series g : series) {
                if (gauge(g.counter())) {
                    carryForward(g.values(), sampled);
                }
            }
        }
        series.sort((a, b) -> {
            int c = Integer.compare(order(a.counter()), order(b.counter()));
            if (c != 0) {
                return c;
            }
            return String.valueOf(a.detail()).compareTo(String.valueOf(b.detail()));
        });
        return new TimeSeriesData(at, bucketSeconds, bucketSeconds * step, starts, series);
    }

    /** A gauge at a point not sampled is the previous point's (the first point's stays 0: before the window, unknown). */
    private static void carryForward(long[] values, boolean[] sampled) {
        for (int i = 1; i < values.length; i++) {
            if (!sampled[i]) {
                values[i] = values[i - 1];
            }
        }
    }

    private static int order(String counter) {
        int i = ORDER.indexOf(counter);
        return i < 0 ? ORDER.size() : i;
    }

    /** @return the series of these counters */
    List<Series> of(String... counters) {
        List<Series> out = new ArrayList<>();
        for (Series s : series) {
            for (String c : counters) {
                if (s.counter().equals(c)) {
                    out.add(s);
                }
            }
        }
        return out;
    }

    /** The API's answer. */
    ObjectNode toJson(String providerKey, String jobType) {
        JsonNodeFactory f = JsonNodeFactory.instance;
        ObjectNode out = f.objectNode();
        out.put("at", at.toString());
        out.put("bucketSeconds", bucketSeconds);
        out.put("stepSeconds", stepSeconds);
        out.put("from", starts.get(0).toString());
        out.put("until", starts.get(starts.size() - 1).plusSeconds(stepSeconds).toString());
        out.put("providerKey", providerKey);
        out.put("jobType", jobType);
        ArrayNode s = out.putArray("starts");
        starts.forEach(t -> s.add(t.toString()));
        ArrayNode list = out.putArray("series");
        ObjectNode totals = f.objectNode();
        for (Series x : series) {
            ObjectNode o = list.addObject();
            o.put("counter", x.counter());
            o.put("detail", x.detail());
            o.put("total", gauge(x.counter()) ? x.max() : x.total());
            ArrayNode v = o.putArray("values");
            for (long n : x.values()) {
                v.add(n);
            }
            if (!gauge(x.counter())) {
                totals.put(x.counter(), totals.path(x.counter()).asLong() + x.total());
            }
        }
        out.set("totals", totals);
        return out;
    }
}
