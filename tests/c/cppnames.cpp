// A producer hands items to a consumer thread through a class template whose methods take
// parameters of namespaced types, by value, reference and pointer: the task names must be the
// methods' own names (`Queue<store::Item>::pop`), never a piece of their parameter lists.
#include <pthread.h>
#include <unistd.h>

#include <cstdio>
#include <vector>

namespace store {
struct Item {
    int key;
};
struct Hint {
    unsigned long spins;
};
struct Who {
    const char* name;
};

template <typename T>
class Queue {
  public:
    Queue() {
        pthread_mutex_init(&m_, nullptr);
        pthread_cond_init(&c_, nullptr);
    }
    __attribute__((noinline)) void push(const T& item, std::vector<int>* log) {
        pthread_mutex_lock(&m_);
        items_.push_back(item);
        if (log) log->push_back(item.key);
        pthread_cond_signal(&c_);
        pthread_mutex_unlock(&m_);
    }
    __attribute__((noinline)) T pop(Hint hint, const Who* who) {
        pthread_mutex_lock(&m_);
        while (items_.empty()) pthread_cond_wait(&c_, &m_);
        T t = items_.front();
        items_.erase(items_.begin());
        pthread_mutex_unlock(&m_);
        (void)hint;
        (void)who;
        return t;
    }

  private:
    pthread_mutex_t m_;
    pthread_cond_t c_;
    std::vector<T> items_;
};
}  // namespace store

static store::Queue<store::Item> queue;
static int out[2];

static void* consume(void*) {
    store::Who who{"consumer"};
    for (;;) {
        store::Item it = queue.pop(store::Hint{0}, &who);
        if (it.key < 0) return nullptr;
        if (write(out[1], &it.key, sizeof it.key) != sizeof it.key) return nullptr;
    }
}

int main() {
    if (pipe(out) != 0) return 1;
    pthread_t t;
    pthread_create(&t, nullptr, consume, nullptr);
    std::vector<int> log;
    for (int i = 0; i < 200; i++) {
        queue.push(store::Item{i}, &log);
        int back;
        if (read(out[0], &back, sizeof back) != sizeof back) return 1;
    }
    queue.push(store::Item{-1}, nullptr);
    pthread_join(t, nullptr);
    std::printf("cppnames items %zu\n", log.size());
    return 0;
}
