package dev.layover.console;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import dev.layover.core.Layover;
import dev.layover.testing.DatabaseTest;
import dev.layover.testing.TestDatabase;
import java.io.ByteArrayInputStream;
import java.nio.charset.StandardCharsets;
import javax.xml.parsers.DocumentBuilderFactory;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.w3c.dom.Document;

/** GET /api/time-series and its charts (/api/time-series/{chart}.svg) over rows of layover.time_series. */
@DatabaseTest
class ConsoleTimeSeriesApiTest {

    private Layover layover;
    private ReplayConsole console;
    private ApiClient api;

    @AfterEach
    void stop() {
        if (console != null) {
            console.close();
        }
        if (layover != null) {
            layover.stop();
        }
    }

    private void start(TestDatabase db) {
        layover = Fixtures.layover(db, Fixtures.work()).build();
        console = ReplayConsole.start(layover, Fixtures.options());
        api = new ApiClient(console);
    }

    /** Counts written as the engine writes them: into the current 10 s and minute buckets. */
    static void counts(TestDatabase db, String jobType, String key, String counter, String detail, long amount) {
        db.value("SELECT layover.time_series_add(ARRAY[?], ARRAY[?], ARRAY[?], ARRAY[?], ARRAY[?::bigint])",
                jobType, key, counter, detail, amount);
    }

    private static JsonNode series(JsonNode answer, String counter, String detail) {
        for (JsonNode s : answer.path("series")) {
            if (s.path("counter").asText().equals(counter) && (detail == null ? s.path("detail").isNull()
                    : detail.equals(s.path("detail").asText()))) {
                return s;
            }
        }
        return null;
    }

    @Test
    void windowsAreDenseSummedAndFilteredByKeyAndJobType(TestDatabase db) {
        start(db);
        counts(db, "work", "test:provider", "completed", "", 5);
        counts(db, "work", "test:provider", "rescheduled", "rate_limited", 2);
        counts(db, "other", "k2", "completed", "", 7);
        counts(db, "work", "test:provider", "due", "", 3);
        counts(db, "work", "test:provider", "due", "", 1); // a smaller sample of the same bucket: the gauge keeps 3
        counts(db, "work", "test:provider", "input_tokens", "tenant:1", 5000); // tokens are not drawn with the events
        // 3 hours ago, in the minute and the hour row, as layover.time_series_add writes it
        for (int seconds : new int[] {60, 3600}) {
            db.update("INSERT INTO layover.time_series_counts (bucket_seconds, bucket, job_type, provider_key, counter, amount)"
                    + " VALUES (?, to_timestamp(floor(extract(epoch FROM now() - interval '3 hours') / ?) * ?), 'work',"
                    + " 'test:provider', 'completed', 100)", seconds, seconds, seconds);
        }

        ApiClient.Resp r = api.get("/api/time-series?resolution=10s&minutes=60");
        assertEquals(200, r.status(), r.body());
        JsonNode all = r.json();
        assertEquals(10, all.path("bucketSeconds").asInt());
        assertEquals(10, all.path("stepSeconds").asInt(), "an hour is 360 points of 10 s");
        assertEquals(360, all.path("starts").size());
        JsonNode completed = series(all, "completed", null);
        assertEquals(12, completed.path("total").asLong(), "summed over keys and types");
        assertEquals(12, completed.path("values").get(359).asLong(), "in the current point");
        assertEquals(12, all.path("totals").path("completed").asLong());
        assertEquals(3, series(all, "due", null).path("total").asLong(), "a gauge keeps its largest sample");
        assertNull(series(all, "input_tokens", "tenant:1"), "token counts are not drawn with the events");

        JsonNode key = api.get("/api/time-series?providerKey=test%3Aprovider").json();
        assertEquals(60, key.path("stepSeconds").asInt());
        assertEquals(60, key.path("starts").size());
        assertEquals(5, series(key, "completed", null).path("total").asLong(), "one key; the 3 hour old row is outside");
        assertEquals(2, series(key, "rescheduled", "rate_limited").path("total").asLong());
        assertEquals("test:provider", key.path("providerKey").asText());

        JsonNode day = api.get("/api/time-series?resolution=1m&minutes=1440&jobType=work").json();
        assertEquals(105, series(day, "completed", null).path("total").asLong(), "24 h reaches the 3 hour old row");
        assertEquals(24, day.path("starts").size(), "1440 minutes are read from the hour rows: 24 points of 1 h");
        assertEquals(3600, day.path("stepSeconds").asInt());
        assertEquals(3600, day.path("bucketSeconds").asInt());
        JsonNode sixHours = api.get("/api/time-series?resolution=1m&minutes=360&jobType=work").json();
        assertEquals(60, sixHours.path("bucketSeconds").asInt(), "up to 360 minutes: minute rows, one point each");
        assertEquals(360, sixHours.path("starts").size());
        assertEquals(105, series(sixHours, "completed", null).path("total").asLong(), "the minute row 3 h ago");
        assertEquals(0, api.get("/api/time-series?jobType=nothing").json().path("series").size());

        JsonNode week = api.get("/api/time-series?resolution=1h&minutes=10080&providerKey=test%3Aprovider").json();
        assertEquals(3600, week.path("bucketSeconds").asInt());
        assertEquals(168, week.path("starts").size(), "a week of hour rows");
        assertEquals(105, series(week, "completed", null).path("total").asLong(), "the hour rows of the same counts");
    }

    /**
     * Core samples the depth every 10 to 60 s and marks each sample: a gauge carries its last sample
     * across the buckets no sample reached, and a marked bucket without a gauge row is an empty queue.
     */
    @Test
    void aGaugeCarriesItsLastSampleAcrossBucketsNotSampled(TestDatabase db) {
        start(db);
        gauge(db, 50, "due", 7);
        gauge(db, 50, "sampled", 1);
        gauge(db, 20, "sampled", 1); // sampled, and none due: 0 from here
        long[] due = dueValues(api.get("/api/time-series?resolution=10s&minutes=60&providerKey=test%3Aprovider").json());
        int at = firstNonZero(due);
        assertTrue(at == 354 || at == 353, "the sample 50 s before the current bucket (a bucket later if one began): " + at);
        assertEquals(7, due[at + 1], "not sampled 40 s ago: the last sample");
        assertEquals(7, due[at + 2], "nor 30 s ago");
        for (int i = at + 3; i < due.length; i++) {
            assertEquals(0, due[i], "sampled 20 s ago with none due, and carried from there: " + i);
        }
        assertNull(series(api.get("/api/time-series?resolution=10s&minutes=60").json(), "sampled", null),
                "the markers are no series");

        db.update("DELETE FROM layover.time_series_counts WHERE counter = 'sampled'");
        due = dueValues(api.get("/api/time-series?resolution=10s&minutes=60&providerKey=test%3Aprovider").json());
        at = firstNonZero(due);
        for (int i = at + 1; i < due.length; i++) {
            assertEquals(0, due[i], "rows from before the markers: a bucket without a row is 0, as it was: " + i);
        }
    }

    /** A 10-second row {@code secondsAgo} before the current bucket, for work on test:provider (a marker: job type and key ''). */
    private static void gauge(TestDatabase db, int secondsAgo, String counter, long amount) {
        boolean marker = counter.equals("sampled");
        db.update("INSERT INTO layover.time_series_counts (bucket_seconds, bucket, job_type, provider_key, counter, amount)"
                + " VALUES (10, to_timestamp(floor(extract(epoch FROM now()) / 10) * 10) - make_interval(secs => ?), ?, ?, ?, ?)",
                secondsAgo, marker ? "" : "work", marker ? "" : "test:provider", counter, amount);
    }

    private static long[] dueValues(JsonNode answer) {
        JsonNode values = series(answer, "due", null).path("values");
        long[] out = new long[values.size()];
        for (int i = 0; i < out.length; i++) {
            out[i] = values.get(i).asLong();
        }
        return out;
    }

    private static int firstNonZero(long[] values) {
        for (int i = 0; i < values.length; i++) {
            if (values[i] != 0) {
                return i;
            }
        }
        throw new AssertionError("no sample in the window");
    }

    @Test
    void chartsAreSvgDocumentsWithEveryTextEscapedAndNoScriptOrStyle(TestDatabase db) throws Exception {
        start(db);
        counts(db, "work", "test:provider", "rescheduled", "<script>window.__xss=1</script>&\"'", 4);
        counts(db, "work", "test:provider", "rate_limited", "", 3);
        for (String chart : new String[] {"throughput", "limits", "failures", "depth"}) {
            ApiClient.Resp r = api.get("/api/time-series/" + chart + ".svg?providerKey=test%3Aprovider");
            assertEquals(200, r.status(), r.body());
            assertEquals("image/svg+xml;charset=utf-8", r.headers().firstValue("Content-Type").orElseThrow().replace(" ", ""));
            assertTrue(r.headers().firstValue("Content-Security-Policy").orElseThrow().contains("script-src 'self'"));
            assertEquals("nosniff", r.headers().firstValue("X-Content-Type-Options").orElseThrow());
            Document svg = DocumentBuilderFactory.newInstance()
                    .newDocumentBuilder().parse(new ByteArrayInputStream(r.body().getBytes(StandardCharsets.UTF_8)));
            assertEquals("svg", svg.getDocumentElement().getTagName());
            assertEquals(0, svg.getElementsByTagName("script").getLength(), chart);
            assertEquals(0, svg.getElementsByTagName("style").getLength(), chart);
            assertFalse(r.body().contains("style="), chart);
        }
        String limits = api.get("/api/time-series/limits.svg?providerKey=test%3Aprovider").body();
        assertTrue(limits.contains("rescheduled: &lt;script&gt;window.__xss=1&lt;/script&gt;&amp;&quot;&#39; 4"), limits);
        assertTrue(limits.contains("rate_limited 3"), limits);
        String empty = api.get("/api/time-series/throughput.svg?jobType=nothing").body();
        assertTrue(empty.contains("nothing counted in this window"), empty);
    }

    @Test
    void badWindowsAndChartsAre400NamingTheParameter(TestDatabase db) {
        start(db);
        String[][] probes = {
            {"/api/time-series?resolution=5s", "resolution"},
            {"/api/time-series?resolution=10s&minutes=61", "minutes"},
            {"/api/time-series?minutes=0", "minutes"},
            {"/api/time-series?minutes=10081", "minutes"},
            {"/api/time-series?resolution=1h&minutes=30", "minutes"},
            {"/api/time-series?minutes=x", "minutes"},
            {"/api/time-series?providerKey=a&providerKey=b", "providerKey"},
            {"/api/time-series?jobType=" + "j".repeat(201), "jobType"},
            {"/api/time-series/pie.svg", "chart"},
            {"/api/time-series/limits.svg?resolution=2h", "resolution"},
        };
        for (String[] p : probes) {
            ApiClient.Resp r = api.get(p[0]);
            assertEquals(400, r.status(), p[0] + ": " + r.body());
            assertEquals(p[1], r.json().path("field").asText(), p[0] + ": " + r.body());
        }
    }
}
