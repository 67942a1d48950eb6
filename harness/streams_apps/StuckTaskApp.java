import java.io.FileInputStream;
import java.io.IOException;
import java.time.Duration;
import java.util.Properties;

import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.kstream.Consumed;

/**
 * A Kafka Streams application whose task gets stuck while its member stays in the group: it reads
 * one topic and drops every record, except that the record whose value is {@code stall} blocks its
 * stream thread for good. The task never commits past that record, the thread never polls again,
 * and the member keeps its tasks as long as max.poll.interval.ms allows (the streams protocol
 * heartbeats from the consumer's background thread).
 *
 * <p>Run with Java's single-file source launcher: {@code java -cp <kafka + streams jars>
 * StuckTaskApp.java <properties file> <input topic>}. SIGTERM closes the application with a
 * timeout, because a close without one would wait for the blocked thread forever.
 */
public final class StuckTaskApp {
    static final String STALL = "stall";
    static final Duration CLOSE_TIMEOUT = Duration.ofSeconds(5);

    public static void main(String[] args) throws IOException {
        if (args.length != 2) {
            System.err.println("usage: StuckTaskApp <properties file> <input topic>");
            System.exit(2);
        }
        Properties properties = new Properties();
        try (FileInputStream in = new FileInputStream(args[0])) {
            properties.load(in);
        }
        StreamsBuilder builder = new StreamsBuilder();
        builder.stream(args[1], Consumed.with(Serdes.String(), Serdes.String())).foreach((key, value) -> {
            if (STALL.equals(value)) {
                blockForever();
            }
        });
        KafkaStreams streams = new KafkaStreams(builder.build(), properties);
        Runtime.getRuntime().addShutdownHook(new Thread(() -> streams.close(CLOSE_TIMEOUT)));
        streams.start();
    }

    private static void blockForever() {
        while (true) {
            try {
                Thread.sleep(1000);
            } catch (InterruptedException stillStuck) {
                // stuck means stuck: an interrupt does not free the task
            }
        }
    }
}
