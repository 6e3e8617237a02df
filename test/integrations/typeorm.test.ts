/** leasehold/typeorm against TypeORM on PostgreSQL (pg) and MySQL/MariaDB (mysql2): see support.ts. */
import { DataSource, EntitySchema } from 'typeorm';
import { typeormTx } from '../../src/integrations/typeorm.js';
import { type Library, ormSuite } from './support.js';

const Order = new EntitySchema<{ id: number }>({ name: 'Order', tableName: 'orders', columns: { id: { type: Number, primary: true } } });

const lib: Library = {
  name: 'typeorm',
  afterEnd: 'validation',
  open: async ({ kind, url, scope }) => {
    const ds = new DataSource(kind === 'postgres'
      ? { type: 'postgres', url, schema: scope, entities: [Order], extra: { max: 2 } }
      : { type: 'mysql', url, entities: [Order], extra: { connectionLimit: 2 } });
    await ds.initialize();
    return {
      transaction: (body) => ds.transaction(async (manager) => body(typeormTx(manager), async (id) => void (await manager.insert(Order, { id })))),
      adaptOutside: () => typeormTx(ds.manager),
      close: () => ds.destroy(),
    };
  },
};

await ormSuite(lib);
