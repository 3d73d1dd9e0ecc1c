package dev.layover.spring.boot;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.layover.core.JobType;
import dev.layover.core.Layover;
import dev.layover.core.outcome.Outcome;
import dev.layover.testing.Await;
import dev.layover.testing.DatabaseTest;
import dev.layover.testing.TestDatabase;
import io.opentelemetry.api.OpenTelemetry;
import io.opentelemetry.api.trace.Span;
import io.opentelemetry.context.Scope;
import io.opentelemetry.sdk.OpenTelemetrySdk;
import io.opentelemetry.sdk.testing.exporter.InMemorySpanExporter;
import io.opentelemetry.sdk.trace.SdkTracerProvider;
import io.opentelemetry.sdk.trace.export.SimpleSpanProcessor;
import java.math.BigDecimal;
import java.time.Duration;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

/**
 * The starter wires the application's {@code OpenTelemetry} bean into Layover's traces
 * ({@code layover.tracing.enabled}) and writes {@code layover.prices[model].*} to the price table; a
 * price without its output is refused naming its property.
 */
@DatabaseTest
class ObservabilityPropertiesTest {

    record Ping(String text) {}

    static final InMemorySpanExporter EXPORTER = InMemorySpanExporter.create();

    @Configuration(proxyBeanMethods = false)
    static class TracedApp {
        @Bean
        OpenTelemetry openTelemetry() {
            return OpenTelemetrySdk.builder().setTracerProvider(SdkTracerProvider.builder()
                    .addSpanProcessor(SimpleSpanProcessor.create(EXPORTER)).build()).build();
        }

        @Bean
        JobType<Ping> starterTracedPing() {
            return JobType.builder("starter-traced-ping", Ping.class).handler((p, ctx) -> Outcome.done()).build();
        }
    }

    @Test
    void theApplicationsOpenTelemetryTracesLayoverAndPricesAreWritten(TestDatabase db) {
        EXPORTER.reset();
        Contexts.on(db).withUserConfiguration(TracedApp.class)
                .withInitializer(Contexts.properties(Map.of(
                        "layover.prices[gpt-4o-mini].input", "0.15",
                        "layover.prices[gpt-4o-mini].output", "0.60",
                        "layover.prices[gpt-4o-mini].cached-input", "0.075",
                        "layover.prices[house].currency", "EUR",
                        "layover.prices[house].input", "1",
                        "layover.prices[house].output", "2",
                        "layover.prices[house].provider-keys[0]", "gateway:*")))
                .run(context -> {
                    assertThat(context).hasNotFailed();
                    Layover layover = context.getBean(Layover.class);
                    @SuppressWarnings("unchecked")
                    JobType<Ping> type = (JobType<Ping>) layover.jobType("starter-traced-ping").orElseThrow();
                    Span request = context.getBean(OpenTelemetry.class).getTracer("app").spanBuilder("request").startSpan();
                    try (Scope s = request.makeCurrent()) {
                        layover.enqueue(type, new Ping("x"));
                    } finally {
                        request.end();
                    }
                    Await.until(Duration.ofSeconds(20), "the run's span", () -> EXPORTER.getFinishedSpanItems().stream()
                            .anyMatch(sp -> sp.getName().equals("process starter-traced-ping")));
                    var run = EXPORTER.getFinishedSpanItems().stream()
                            .filter(sp -> sp.getName().equals("process starter-traced-ping")).findFirst().orElseThrow();
                    assertEquals(request.getSpanContext().getTraceId(), run.getLinks().get(0).getSpanContext().getTraceId(),
                            "linked to the enqueue inside the request's trace");
                    Map<String, Object> mini = db.row("select * from layover.model_prices where model = 'gpt-4o-mini'");
                    assertEquals(0, new BigDecimal("0.075").compareTo((BigDecimal) mini.get("cached_input_per_million")));
                    assertEquals("USD", mini.get("currency"));
                    Map<String, Object> house = db.row("select currency, provider_keys::text as keys from layover.model_prices "
                            + "where model = 'house'");
                    assertEquals("EUR", house.get("currency"));
                    assertEquals("{gateway:*}", house.get("keys"));
                });
    }

    @Test
    void tracingOffLeavesTheEnqueueUntraced(TestDatabase db) {
        EXPORTER.reset();
        Contexts.on(db).withUserConfiguration(TracedApp.class)
                .withPropertyValues("layover.tracing.enabled=false", "layover.run-jobs=false")
                .run(context -> {
                    Layover layover = context.getBean(Layover.class);
                    @SuppressWarnings("unchecked")
                    JobType<Ping> type = (JobType<Ping>) layover.jobType("starter-traced-ping").orElseThrow();
                    Span request = context.getBean(OpenTelemetry.class).getTracer("app").spanBuilder("request").startSpan();
                    String id;
                    try (Scope s = request.makeCurrent()) {
                        id = layover.enqueue(type, new Ping("x")).id();
                    } finally {
                        request.end();
                    }
                    assertEquals(null, db.value("select trace_context from layover.scheduled_tasks where task_instance = ?", id));
                    assertTrue(EXPORTER.getFinishedSpanItems().stream().noneMatch(sp -> sp.getName().startsWith("send ")));
                });
    }

    @Test
    void aPriceWithoutItsOutputIsRefusedNamingItsProperty(TestDatabase db) {
        Contexts.on(db).withInitializer(Contexts.properties(Map.of("layover.prices[gpt-4o].input", "2.5")))
                .run(context -> {
                    assertThat(context).hasFailed();
                    assertThat(context.getStartupFailure()).rootCause()
                            .hasMessageContaining("needs both an input and an output price");
                    assertThat(context.getStartupFailure()).hasStackTraceContaining("layover.prices[gpt-4o]");
                });
    }
}
