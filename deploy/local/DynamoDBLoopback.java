// Runs DynamoDB Local listening on 127.0.0.1 only. Its command line has
// no host option and its Jetty server binds every interface; a local
// stack must not be reachable from the network. internal/localstack runs
// this file with Java's single-file source launcher:
//
//   java -cp DynamoDBLocal.jar:DynamoDBLocal_lib/* DynamoDBLoopback.java <DynamoDB Local arguments>
//
// It builds the server with ServerRunner.createServerFromCommandLineArgs,
// DynamoDB Local's documented embedding entry point, binds every Jetty
// connector of the server to 127.0.0.1 before it starts, and runs it.
import com.amazonaws.services.dynamodbv2.local.main.ServerRunner;
import com.amazonaws.services.dynamodbv2.local.server.DynamoDBProxyServer;
import org.eclipse.jetty.server.Connector;
import org.eclipse.jetty.server.Server;
import org.eclipse.jetty.server.ServerConnector;

public class DynamoDBLoopback {
    public static void main(String[] args) throws Exception {
        DynamoDBProxyServer proxy = ServerRunner.createServerFromCommandLineArgs(args);
        java.lang.reflect.Field f = DynamoDBProxyServer.class.getDeclaredField("server");
        f.setAccessible(true);
        Server server = (Server) f.get(proxy);
        int bound = 0;
        for (Connector c : server.getConnectors()) {
            if (c instanceof ServerConnector sc) {
                sc.setHost("127.0.0.1");
                bound++;
            }
        }
        if (bound == 0) {
            throw new IllegalStateException("DynamoDB Local has no Jetty ServerConnector to bind to loopback: its internals changed");
        }
        proxy.start();
        proxy.join();
    }
}
