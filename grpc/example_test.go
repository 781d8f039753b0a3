package pacergrpc_test

import (
	"context"
	"fmt"
	"net"

	"github.com/pacer-go/pacer"
	pacergrpc "github.com/pacer-go/pacer/grpc"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
)

// A gRPC client paced by the same Transport, and the same limits, as an
// HTTP client would be.
func Example() {
	// A real gRPC server on loopback, standing in for the API.
	lis, _ := net.Listen("tcp", "127.0.0.1:0")
	srv := grpc.NewServer()
	healthpb.RegisterHealthServer(srv, health.NewServer())
	go srv.Serve(lis)
	defer srv.Stop()

	tr := pacer.New(nil, pacer.WithLimit(pacer.PerSecond(50)), pacer.WithConcurrency(8),
		pacer.WithWorkload("interactive", pacer.Workload{Reserve: 0.3}))
	conn, err := grpc.NewClient(lis.Addr().String(),
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithUnaryInterceptor(pacergrpc.UnaryClientInterceptor(tr)),
		grpc.WithStreamInterceptor(pacergrpc.StreamClientInterceptor(tr)))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer conn.Close()

	ctx := pacer.ContextWithWorkload(context.Background(), "interactive")
	resp, err := healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(resp.GetStatus())
	// Output: SERVING
}
