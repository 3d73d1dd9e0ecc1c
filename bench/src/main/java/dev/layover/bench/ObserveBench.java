package dev.layover.bench;

import dev.layover.core.JobType;
import dev.layover.core.Layover;
import dev.layover.core.outcome.Outcome;
import dev.layover.core.provider.Provider;
import dev.layover.core.tokens.TokenUsage;
import dev.layover.core.tracing.OpenTelemetryTracing;
import io.opentelemetry.sdk.OpenTelemetrySdk;
import io.opentelemetry.sdk.common.CompletableResultCode;
import io.opentelemetry.sdk.trace.SdkTracerProvider;
import io.opentelemetry.sdk.trace.data.SpanData;
import io.opentelemetry.sdk.trace.export.SimpleSpanProcessor;
import io.opentelemetry.sdk.trace.export.SpanExporter;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.concurrent.atomic.LongAdder;
import javax.sql.DataSource;

/**
 * What seeing Layover from outside costs a run (issue 49): no-op jobs drained by one worker JVM, in
 * arms run in turn within one run: the default (MDC on, no tracing, no usage reported), the run
 * reporting usage (its tokens counted in the time series), the MDC off, and tracing on through the
 * OpenTelemetry SDK (every span sampled and exported to a sink that counts them; each job stored
 * with a trace context to link to, so each pick also reads them).
 */
public final class ObserveBench {

    /**
     * One arm's round.
     *
     * @param arm what it runs
     * @param jobs jobs drained
     * @param seconds from start to the table empty
     * @param spans spans exported (the traced arm)
     */
    public record Run(String arm, int jobs, double seconds, long spans) {
        /** @return jobs per second */
        public double perSecond() {
            return jobs / seconds;
        }
    }

    record NoOp(int n) {}

    static final String DEFAULT = "default (MDC on)";
    static final String USAGE = "usage reported (tokens counted)";
    static final String NO_MDC = "MDC off";
    static final String TRACED = "tracing on (OpenTelemetry SDK, all sampled)";
    static final List<String> ARMS = List.of(DEFAULT, USAGE, NO_MDC, TRACED);

    private ObserveBench() {}

    /**
     * @param ds the database
     * @param jobs jobs per round
     * @param threads worker threads
     * @param rounds rounds of every arm, interleaved
     * @return every round, arms in turn
     * @throws Exception on failure
     */
    public static List<Run> measure(DataSource ds, int jobs, int threads, int rounds) throws Exception {
        List<Run> out = new ArrayList<>();
        for (int r = 0; r < rounds; r++) {
            for (String arm : ARMS) {
                out.add(round(ds, arm, jobs, threads));
            }
        }
        return out;
    }

    private static Run round(DataSource ds, String arm, int jobs, int threads) throws Exception {
        boolean usage = arm.equals(USAGE);
        JobType<NoOp> noop = JobType.builder("observe-noop", NoOp.class).providerKey("bench:observe")
                .handler((a, ctx) -> {
                    if (usage) {
                        ctx.reportUsage(new TokenUsage(Provider.OPENAI, 100, 20, 10, 0));
                    }
                    return Outcome.done();
                }).build();
        LongAdder exported = new LongAdder();
        SdkTracerProvider tracer = SdkTracerProvider.builder().addSpanProcessor(SimpleSpanProcessor.create(new SpanExporter() {
            @Override
            public CompletableResultCode export(Collection<SpanData> spans) {
                exported.add(spans.size());
                return CompletableResultCode.ofSuccess();
            }

            @Override
            public CompletableResultCode flush() {
                return CompletableResultCode.ofSuccess();
            }

            @Override
            public CompletableResultCode shutdown() {
                return CompletableResultCode.ofSuccess();
            }
        })).build();
        Layover.Builder b = Layover.builder(ds).register(noop).threads(threads).pollInterval(Duration.ofMillis(500))
                .mdc(!arm.equals(NO_MDC));
        if (arm.equals(TRACED)) {
            b.tracing(OpenTelemetryTracing.of(OpenTelemetrySdk.builder().setTracerProvider(tracer).build()));
        }
        Layover l = b.build();
        ThroughputBench.exec(ds, "truncate layover.scheduled_tasks, layover.job_history");
        ThroughputBench.exec(ds, "insert into layover.scheduled_tasks (task_name, task_instance, task_data, execution_time,"
                + " picked, version, provider_key, trace_context) select 'observe-noop', 'j' || g,"
                + " convert_to('{\"n\":' || g || '}', 'UTF8'), now(), false, 1, 'bench:observe', "
                + (arm.equals(TRACED) ? "'{\"traceparent\": \"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01\"}'"
                        : "NULL") + " from generate_series(1, " + jobs + ") g");
        ThroughputBench.exec(ds, "analyze layover.scheduled_tasks");
        long t0 = System.nanoTime();
        l.start();
        ThroughputBench.waitEmpty(ds, "layover.scheduled_tasks where task_name = 'observe-noop'");
        double secs = (System.nanoTime() - t0) / 1e9;
        l.stop();
        tracer.close();
        return new Run(arm, jobs, secs, exported.sum());
    }
}
