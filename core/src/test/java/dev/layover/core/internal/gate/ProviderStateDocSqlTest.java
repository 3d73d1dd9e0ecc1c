package dev.layover.core.internal.gate;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.layover.core.spi.Db;
import dev.layover.core.outcome.Outcome;
import dev.layover.testing.DatabaseTest;
import dev.layover.testing.TestDatabase;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import dev.layover.core.internal.gate.ProviderGate;
import dev.layover.core.provider.state.BreakerSettings;
import dev.layover.core.provider.state.BucketSettings;
import dev.layover.core.provider.state.CooldownSettings;
import dev.layover.core.provider.state.DiscoverySettings;
import dev.layover.core.provider.state.ProviderStates;

/** Every SQL query of docs/provider-state.md runs against the real schema and finds the state it describes. */
@DatabaseTest
class ProviderStateDocSqlTest {

    private static final Pattern SQL_BLOCK = Pattern.compile("```sql\\n(.*?)```", Pattern.DOTALL);

    @Test
    void everyDocumentedQueryRunsAndFindsTheSeededState(TestDatabase db) throws Exception {
        ProviderGate gate = new ProviderGate(new Db(db.dataSource()), Clock.systemUTC(), "worker-a",
                new ProviderGate.Config(BreakerSettings.defaults(), java.util.Map.of(),
                        CooldownSettings.defaults().withDiscovery(DiscoverySettings.defaults()),
                        java.util.Map.of("azure:gpt-4o-mini@westeurope", BucketSettings.requestsPerMinute(60)), List.of()));
        ProviderStates states = new ProviderStateHandle(gate);
        states.forceOpen("openai:gpt-4o-mini", Duration.ofMinutes(5), "incident");
        gate.afterCall("openai:gpt-4o-mini", null, Outcome.rateLimited(Duration.ofSeconds(30), "429"));
        gate.afterCall("gemini:gemini-2.5-flash", null, Outcome.rateLimited(null)); // a 429 stating nothing: a discovered pace
        states.forceOpen("anthropic:claude-haiku", null, "maintenance");
        states.forceClose("anthropic:claude-haiku", "done");
        states.setLimit("openai:gpt-4o-mini", dev.layover.core.provider.state.LimitOverride.requestsPerMinute(600),
                "the provider lowered our tier");
        gate.start();
        for (int i = 0; i < 3; i++) { // takes the bucket's permits
            gate.admitEndpoint("azure:gpt-4o-mini@westeurope", 0);
        }
        gate.stop();
        String trail = "[{\"at\":\"2026-01-01T00:00:00Z\",\"attempt\":1,\"key\":\"openai:gpt-4o-mini\",\"result\":\"rate_limited\","
                + "\"detail\":\"429\",\"wait_ms\":20000},{\"at\":\"2026-01-01T00:00:01Z\",\"attempt\":1,"
                + "\"key\":\"azure:gpt-4o-mini@westeurope\",\"result\":\"answered\",\"detail\":null,\"wait_ms\":null}]";
        db.update("""
                insert into layover.scheduled_tasks (task_name, task_instance, task_data, execution_time, picked, version,
                    consecutive_failures, provider_key, reschedules, last_reschedule_reason, last_reschedule_detail,
                    last_rescheduled_at, provider_trail)
                values ('translate', 'waiting', convert_to('{}', 'UTF8'), now() + interval '30 seconds', false, 2, 0,
                        'openai:gpt-4o-mini', 1, 'cooldown', 'cools down', now(), ?::jsonb)""", trail);
        db.update("""
                insert into layover.dead_letters (id, job_type, job_id, args, failure_type, first_enqueued_at, provider_trail)
                overriding system value values (42, 'translate', 'parked', '{}', 'rejected', now(), ?::jsonb)""", trail);

        String doc = Files.readString(Path.of("..", "docs", "provider-state.md"));
        List<String> queries = new ArrayList<>();
        Matcher m = SQL_BLOCK.matcher(doc);
        while (m.find()) {
            queries.add(m.group(1).strip());
        }
        assertTrue(queries.size() >= 6, "the doc's queries: " + queries.size());
        for (String q : queries) {
            if (q.startsWith("UPDATE")) {
                continue;
            }
            assertFalse(db.rows(q).isEmpty(), "the seeded state answers this documented query:\n" + q);
        }
    }
}
