package dev.layover.samples.boot;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.layover.core.Enqueued;
import dev.layover.core.Layover;
import dev.layover.testing.Await;
import dev.layover.testing.DatabaseTest;
import dev.layover.testing.LayoverPostgresExtension;
import dev.layover.testing.TestDatabase;
import java.time.Duration;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.springframework.boot.SpringApplication;
import org.springframework.context.ConfigurableApplicationContext;

/**
 * The same application on Spring Boot 4 (Spring Framework 7, Java 17; Layover keeps its own
 * Jackson 2 mapper, so Boot's Jackson 3 default does not matter), started as an application is,
 * with {@link SpringApplication#run}, so that closing it is part of the test.
 */
@DatabaseTest
class ReceiptsApplicationOnBoot4Test {

    @Test
    void runsAJobAndParksTheOneThatCannotSucceedOnBoot4() {
        Layover layover;
        try (TestDatabase db = LayoverPostgresExtension.emptyDatabase();
                ConfigurableApplicationContext context = SpringApplication.run(ReceiptsApplication.class,
                        "--spring.datasource.url=" + db.jdbcUrl())) {
            layover = context.getBean(Layover.class);
            assertTrue(layover.isRunning(), "the starter started the workers with the context");
            Checkout checkout = context.getBean(Checkout.class);
            Enqueued sent = checkout.orderPlaced("order-1", "ada@example.com");
            Enqueued parked = checkout.orderPlaced("order-2", "not-an-address");

            Await.until(Duration.ofSeconds(30), "both jobs leave the queue",
                    () -> db.count("select count(*) from layover.jobs") == 0
                            && db.count("select count(*) from layover.job_history") == 2);
            assertEquals("completed", db.value("select outcome from layover.job_history where job_id = ?", sent.id()));
            Map<String, Object> dead = db.row("select failure_type, state from layover.dead_letters where job_id = ?",
                    parked.id());
            assertEquals("handler_parked", dead.get("failure_type"));
            assertEquals("parked", dead.get("state"));
            context.close();
            assertFalse(layover.isRunning(), "closing the context stops the workers");
        }
    }
}
