package dev.layover.samples.boot;

import dev.layover.core.JobType;
import dev.layover.core.outcome.Outcome;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.boot.SpringApplication;
import org.springframework.boot.autoconfigure.SpringBootApplication;
import org.springframework.context.annotation.Bean;

/**
 * A Spring Boot application with only the Layover starter: a {@link JobType} bean is all it
 * declares. The starter builds Layover on the application's {@code DataSource}
 * ({@code spring.datasource.*}), migrates schema {@code layover}, registers the job type, starts
 * the workers with the context and stops them with it. {@link Checkout} enqueues.
 */
@SpringBootApplication
public class ReceiptsApplication {

    private static final Logger LOG = LoggerFactory.getLogger(ReceiptsApplication.class);

    /**
     * A receipt to send.
     *
     * @param orderId the order
     * @param email where to send it
     */
    public record SendReceipt(String orderId, String email) {}

    /**
     * Sends receipts; an address that cannot receive mail is parked (it waits in
     * {@code layover.dead_letters} for a person), not retried.
     *
     * @return the job type, registered by the starter
     */
    @Bean
    JobType<SendReceipt> sendReceipt() {
        return JobType.builder("send-receipt", SendReceipt.class)
                .handler((args, ctx) -> {
                    if (!args.email().contains("@")) {
                        return Outcome.park("not an email address: " + args.email());
                    }
                    LOG.info("receipt of order {} sent to {} (job {})", args.orderId(), args.email(), ctx.jobId());
                    return Outcome.done();
                })
                .build();
    }

    /**
     * @param args Spring Boot's arguments
     */
    public static void main(String[] args) {
        SpringApplication.run(ReceiptsApplication.class, args);
    }
}
