package dev.layover.core.observability;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.sun.net.httpserver.HttpServer;
import dev.layover.core.Enqueued;
import dev.layover.core.JobType;
import dev.layover.core.Layover;
import dev.layover.core.outcome.Outcome;
import dev.layover.core.provider.Provider;
import dev.layover.core.provider.ProviderClassifier;
import dev.layover.core.spi.JobWrites;
import dev.layover.core.tracing.OpenTelemetryTracing;
import dev.layover.testing.Await;
import dev.layover.testing.DatabaseTest;
import dev.layover.testing.TestDatabase;
import dev.layover.testing.provider.FakeProvider;
import dev.layover.testing.provider.FakeProvider.Phase;
import io.opentelemetry.api.common.AttributeKey;
import io.opentelemetry.api.trace.Span;
import io.opentelemetry.api.trace.SpanKind;
import io.opentelemetry.api.trace.StatusCode;
import io.opentelemetry.api.trace.Tracer;
import io.opentelemetry.api.trace.propagation.W3CTraceContextPropagator;
import io.opentelemetry.context.Context;
import io.opentelemetry.context.Scope;
import io.opentelemetry.context.propagation.TextMapGetter;
import io.opentelemetry.sdk.OpenTelemetrySdk;
import io.opentelemetry.sdk.testing.exporter.InMemorySpanExporter;
import io.opentelemetry.sdk.trace.SdkTracerProvider;
import io.opentelemetry.sdk.trace.data.EventData;
import io.opentelemetry.sdk.trace.data.SpanData;
import io.opentelemetry.sdk.trace.export.SimpleSpanProcessor;
import java.net.InetSocketAddress;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.sql.Connection;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.slf4j.LoggerFactory;
import org.slf4j.MDC;

/**
 * Traces from enqueue to run, through the OpenTelemetry SDK with its in-memory exporter: an HTTP
 * request's trace holds the enqueue's span; each run of the job is a span of its own, linked to it,
 * with the 429, the reschedule and the park as events; the trace context survives a reschedule, a
 * park and a replay; a malformed stored context is ignored. The handler's MDC names its job and trace.
 */
@DatabaseTest
class TracingTest {

    record Doc(String text) {}

    private static final HttpClient HTTP = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();
    private static final AttributeKey<String> DECISION = AttributeKey.stringKey("layover.decision");
    private static final AttributeKey<String> OUTCOME = AttributeKey.stringKey("layover.outcome");

    private final InMemorySpanExporter exporter = InMemorySpanExporter.create();
    private final SdkTracerProvider tracerProvider = SdkTracerProvider.builder()
            .addSpanProcessor(SimpleSpanProcessor.create(exporter)).build();
    private final OpenTelemetrySdk otel = OpenTelemetrySdk.builder().setTracerProvider(tracerProvider).build();
    private final Tracer appTracer = otel.getTracer("the-application");
    private final FakeProvider fake = FakeProvider.start();
    private final List<Map<String, String>> mdcSeen = Collections.synchronizedList(new ArrayList<>());

    static {
        org.slf4j.WorkingMdc.install();
    }

    @AfterEach
    void close() {
        fake.close();
        tracerProvider.close();
    }

    /** Calls the fake provider; a 429 becomes the classifier's outcome, an answer reports its usage. */
    private JobType<Doc> translate() {
        ProviderClassifier classifier = ProviderClassifier.create();
        return JobType.builder("traced-translate", Doc.class)
                .providerKey("fake:primary")
                .handler((args, ctx) -> {
                    mdcSeen.add(MDC.getCopyOfContextMap() == null ? Map.of() : MDC.getCopyOfContextMap());
                    LoggerFactory.getLogger("the-handler").info("translating {}", args.text());
                    HttpResponse<String> r = HTTP.send(HttpRequest.newBuilder(fake.primary().url())
                            .POST(HttpRequest.BodyPublishers.ofString("{\"model\":\"gpt-4o-mini\",\"messages\":"
                                    + "[{\"role\":\"user\",\"content\":\"" + args.text() + "\"}]}")).build(),
                            HttpResponse.BodyHandlers.ofString());
                    if (r.statusCode() == 429) {
                        fake.primary().phase(Phase.NORMAL); // the next call gets through
                    }
                    var failure = classifier.classify(Provider.OPENAI, r);
                    if (failure.isPresent()) {
                        return failure.get().toOutcome();
                    }
                    ctx.reportUsage(Provider.OPENAI, r.body());
                    return Outcome.done();
                })
                .build();
    }

    private Layover.Builder builder(TestDatabase db, JobType<?>... types) {
        return ObservabilityFixtures.builder(db).register(types).tracing(OpenTelemetryTracing.of(otel));
    }

    /** The application's own endpoint: its server span continues the caller's trace and encloses the enqueue. */
    private HttpServer endpoint(Layover layover, JobType<Doc> type, AtomicReference<Enqueued> enqueued) throws Exception {
        HttpServer server = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
        server.createContext("/translate", exchange -> {
            Map<String, String> headers = new HashMap<>();
            exchange.getRequestHeaders().forEach((k, v) -> headers.put(k.toLowerCase(), v.get(0)));
            Context parent = W3CTraceContextPropagator.getInstance().extract(Context.root(), headers, MAP_GETTER);
            Span span = appTracer.spanBuilder("POST /translate").setParent(parent).setSpanKind(SpanKind.SERVER).startSpan();
            try (Scope s = span.makeCurrent()) {
                enqueued.set(layover.enqueue(type, new Doc(new String(exchange.getRequestBody().readAllBytes()))));
                exchange.sendResponseHeaders(202, -1);
            } finally {
                span.end();
                exchange.close();
            }
        });
        server.start();
        return server;
    }

    private static final TextMapGetter<Map<String, String>> MAP_GETTER = new TextMapGetter<>() {
        @Override
        public Iterable<String> keys(Map<String, String> carrier) {
            return carrier.keySet();
        }

        @Override
        public String get(Map<String, String> carrier, String key) {
            return carrier.get(key);
        }
    };

    private List<SpanData> spans(String name) {
        return exporter.getFinishedSpanItems().stream().filter(s -> s.getName().equals(name)).toList();
    }

    private static EventData event(SpanData s, String name) {
        return s.getEvents().stream().filter(e -> e.getName().equals(name)).findFirst()
                .orElseThrow(() -> new AssertionError(s.getName() + " has no event " + name + ": " + s.getEvents()));
    }

    @Test
    void oneTraceFromAnHttpRequestThroughTheEnqueueA429TheRescheduleAndTheRun(TestDatabase db) throws Exception {
        fake.primary().phase(Phase.THROTTLED).throttledRetryAfter(Duration.ofSeconds(1));
        JobType<Doc> type = translate();
        AtomicReference<Enqueued> enqueued = new AtomicReference<>();
        try (Layover layover = builder(db, type).start()) {
            HttpServer server = endpoint(layover, type, enqueued);
            try {
                // the caller of the HTTP endpoint: its span starts the trace, its traceparent header carries it
                Span client = appTracer.spanBuilder("client").setSpanKind(SpanKind.CLIENT).startSpan();
                Map<String, String> headers = new HashMap<>();
                W3CTraceContextPropagator.getInstance().inject(Context.root().with(client), headers, Map::put);
                HttpResponse<Void> r = HTTP.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:"
                        + server.getAddress().getPort() + "/translate")).header("traceparent", headers.get("traceparent"))
                        .POST(HttpRequest.BodyPublishers.ofString("hello")).build(), HttpResponse.BodyHandlers.discarding());
                client.end();
                assertEquals(202, r.statusCode());
                Await.until(ObservabilityFixtures.WAIT, "two runs, the second done", () ->
                        spans("process traced-translate").stream().anyMatch(s -> "done".equals(s.getAttributes().get(DECISION))));
            } finally {
                server.stop(0);
            }
        }
        SpanData client = spans("client").get(0);
        SpanData request = spans("POST /translate").get(0);
        SpanData send = spans("send traced-translate").get(0);
        assertEquals(client.getTraceId(), request.getTraceId(), "the request continues the caller's trace");
        assertEquals(request.getSpanId(), send.getParentSpanId(), "the enqueue is a child of the request's span");
        assertEquals(request.getTraceId(), send.getTraceId());
        assertEquals(SpanKind.PRODUCER, send.getKind());
        assertEquals(enqueued.get().id(), send.getAttributes().get(AttributeKey.stringKey("layover.job.id")));

        List<SpanData> runs = spans("process traced-translate");
        assertEquals(2, runs.size(), "a 429 and a successful run: " + runs);
        SpanData limited = runs.stream().filter(s -> "rescheduled".equals(s.getAttributes().get(DECISION))).findFirst()
                .orElseThrow();
        SpanData done = runs.stream().filter(s -> "done".equals(s.getAttributes().get(DECISION))).findFirst().orElseThrow();
        for (SpanData run : runs) {
            assertEquals(SpanKind.CONSUMER, run.getKind());
            assertFalse(run.getParentSpanContext().isValid(), "a run is not the producer's child");
            assertNotEquals(send.getTraceId(), run.getTraceId(), "a run hours later does not stretch the request's trace");
            assertEquals(1, run.getLinks().size());
            assertEquals(send.getSpanContext().getTraceId(), run.getLinks().get(0).getSpanContext().getTraceId());
            assertEquals(send.getSpanContext().getSpanId(), run.getLinks().get(0).getSpanContext().getSpanId(),
                    "each run links to the enqueue's span");
            assertEquals(enqueued.get().id(), run.getAttributes().get(AttributeKey.stringKey("layover.job.id")));
            assertEquals("fake:primary", run.getAttributes().get(AttributeKey.stringKey("layover.provider_key")));
            assertEquals(1L, run.getAttributes().get(AttributeKey.longKey("layover.attempt")), "a 429 spends no attempt");
        }
        assertEquals("rate_limited", limited.getAttributes().get(OUTCOME));
        assertEquals(0L, limited.getAttributes().get(AttributeKey.longKey("layover.reschedules")));
        EventData wait = event(limited, "layover.rate_limited");
        long waitMs = wait.getAttributes().get(AttributeKey.longKey("layover.wait_ms"));
        assertTrue(waitMs > 0 && waitMs <= 2000, "the 429's wait: " + waitMs);
        assertEquals("rate_limited", event(limited, "layover.rescheduled").getAttributes()
                .get(AttributeKey.stringKey("layover.reschedule_reason")));
        assertEquals(StatusCode.UNSET, limited.getStatus().getStatusCode(), "a rate limit is a layover, not a failure");

        assertEquals("done", done.getAttributes().get(OUTCOME));
        assertEquals(1L, done.getAttributes().get(AttributeKey.longKey("layover.reschedules")));
        assertTrue(done.getAttributes().get(AttributeKey.longKey("gen_ai.usage.input_tokens")) > 0, "tokens in");
        assertTrue(done.getAttributes().get(AttributeKey.longKey("gen_ai.usage.output_tokens")) > 0, "tokens out");
        assertTrue(done.getStartEpochNanos() > limited.getEndEpochNanos(), "the run after the reschedule");

        // the handler's MDC named its job and its run's trace
        assertEquals(2, mdcSeen.size());
        Map<String, String> second = mdcSeen.get(1);
        assertEquals("traced-translate", second.get("layover.job_type"));
        assertEquals(enqueued.get().id(), second.get("layover.job_id"));
        assertEquals("1", second.get("layover.attempt"));
        assertEquals("fake:primary", second.get("layover.provider_key"));
        assertEquals(done.getTraceId(), second.get("trace_id"));
        assertEquals(done.getSpanId(), second.get("span_id"));
        assertEquals(limited.getTraceId(), mdcSeen.get(0).get("trace_id"));
    }

    @Test
    void theContextSurvivesAParkAndTheReplayRunLinksToTheSameEnqueue(TestDatabase db) throws Exception {
        boolean[] parkIt = {true};
        JobType<Doc> type = JobType.builder("traced-park", Doc.class)
                .handler((args, ctx) -> parkIt[0] ? Outcome.park("not today") : Outcome.done())
                .build();
        Span request = appTracer.spanBuilder("request").startSpan();
        Enqueued job;
        try (Layover layover = builder(db, type).start()) {
            try (Scope s = request.makeCurrent()) {
                job = layover.enqueue(type, new Doc("x"));
            } finally {
                request.end();
            }
            Await.equal(ObservabilityFixtures.WAIT, "parked", 1L,
                    () -> db.count("select count(*) from layover.dead_letters where job_id = ?", job.id()));
            Object stored = db.value("select trace_context->>'traceparent' from layover.dead_letters where job_id = ?",
                    job.id());
            SpanData send = spans("send traced-park").get(0);
            assertEquals("00-" + send.getTraceId() + "-" + send.getSpanId() + "-" + send.getSpanContext().getTraceFlags().asHex(),
                    stored, "the park moved the context");
            parkIt[0] = false;
            long deadLetter = (Long) db.value("select id from layover.dead_letters where job_id = ?", job.id());
            try (Connection c = db.dataSource().getConnection()) {
                c.setAutoCommit(false);
                JobWrites.on(db.dataSource()).insertReplays(c, new long[] {deadLetter}, new String[] {null}, null, 0,
                        "manual");
                c.commit();
            }
            layover.wakeUp();
            Await.until(ObservabilityFixtures.WAIT, "the replay ran", () -> spans("process traced-park").size() == 2);
            SpanData parked = spans("process traced-park").stream()
                    .filter(s -> "parked".equals(s.getAttributes().get(DECISION))).findFirst().orElseThrow();
            assertEquals(StatusCode.ERROR, parked.getStatus().getStatusCode());
            assertEquals("handler_parked", event(parked, "layover.parked").getAttributes()
                    .get(AttributeKey.stringKey("layover.failure_type")));
            for (SpanData run : spans("process traced-park")) {
                assertEquals(send.getSpanId(), run.getLinks().get(0).getSpanContext().getSpanId(), run.toString());
            }
        }
    }

    @Test
    void aMalformedStoredTraceparentIsIgnored(TestDatabase db) throws Exception {
        JobType<Doc> type = JobType.builder("traced-old", Doc.class).handler((args, ctx) -> Outcome.done()).build();
        try (Layover layover = builder(db, type).build()) {
            // enqueued outside any span: nothing stored; then an old producer's unreadable value
            Enqueued job = layover.enqueue(type, new Doc("x"));
            assertEquals(null, db.value("select trace_context from layover.scheduled_tasks where task_instance = ?",
                    job.id()));
            assertTrue(spans("send traced-old").isEmpty(), "no span outside a span");
            db.update("update layover.scheduled_tasks set trace_context = '{\"traceparent\": \"00-not-a-context\"}' "
                    + "where task_instance = ?", job.id());
            layover.start();
            Await.until(ObservabilityFixtures.WAIT, "the run", () -> !spans("process traced-old").isEmpty());
            SpanData run = spans("process traced-old").get(0);
            assertTrue(run.getLinks().isEmpty(), "no link to a context that does not parse");
            assertEquals(Boolean.TRUE, run.getAttributes().get(AttributeKey.booleanKey("layover.trace_context.invalid")));
            assertEquals("done", run.getAttributes().get(DECISION));
            assertNotNull(run.getAttributes().get(AttributeKey.stringKey("layover.job.id")));
        }
    }
}
