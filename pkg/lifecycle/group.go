// Package lifecycle runs turnd's process as one group of actors, in the
// manner of oklog/run: each component is an execute function that blocks
// while it works and an interrupt function that makes it return. When the
// first actor returns, every actor is interrupted, and Run returns the first
// actor's error once all have returned. Ordering rules between actors are
// written where the actors are added (cmd/turnd).
package lifecycle

// Group is a set of actors. The zero value is ready to use.
type Group struct {
	actors []actor
}

type actor struct {
	name      string
	execute   func() error
	interrupt func(error)
}

// Add adds an actor. interrupt must make execute return soon and may be
// called after execute has already returned.
func (g *Group) Add(name string, execute func() error, interrupt func(error)) {
	g.actors = append(g.actors, actor{name, execute, interrupt})
}

// Stopped reports which actor ended the group and with what error.
type Stopped struct {
	Actor string
	Err   error
}

// Run starts every actor and blocks until all have returned. It returns the
// name and error of the actor that returned first.
func (g *Group) Run() Stopped {
	if len(g.actors) == 0 {
		return Stopped{}
	}
	done := make(chan Stopped, len(g.actors))
	for _, a := range g.actors {
		go func(a actor) { done <- Stopped{Actor: a.name, Err: a.execute()} }(a)
	}
	first := <-done
	for _, a := range g.actors {
		a.interrupt(first.Err)
	}
	for i := 1; i < len(g.actors); i++ {
		<-done
	}
	return first
}
